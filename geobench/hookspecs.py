"""The hook marker and the component kinds, at their stable import path (defined in
``geobench.contract.hooks``)."""

from geobench.contract.hooks import KINDS, hookimpl, hookspec, lazy

__all__ = ["KINDS", "hookimpl", "hookspec", "lazy"]
