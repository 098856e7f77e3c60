"""The hook marker and the component kinds, at their stable import path (defined in
``geobench.contract.hookspecs``)."""

from geobench.contract.hookspecs import KINDS, hookimpl, hookspec, lazy

__all__ = ["KINDS", "hookimpl", "hookspec", "lazy"]
