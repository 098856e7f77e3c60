"""The loaded plugins' registry, at its stable import path (defined in
``geobench.contract.plugins``)."""

from geobench.contract.plugins import GROUP, load_registry, plugins, registry

__all__ = ["GROUP", "load_registry", "plugins", "registry"]
