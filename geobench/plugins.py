"""Loads plugins from the ``geobench`` entry-point group into a ``Registry``.

``GEOBENCH_PLUGINS=a,b`` loads only the named entry points (the core's own ``core`` entry
point always loads); ``GEOBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` loads only the built-in plugins.
A plugin that fails to import is reported on stderr and skipped.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib.metadata import EntryPoint, entry_points

import pluggy

from geobench import hookspecs
from geobench.hookspecs import KINDS
from geobench.registry import EmptyParams, Entry, Registry

GROUP = "geobench"
BUILTIN_DIST = "geobench"


def _selected(eps: list[EntryPoint]) -> list[EntryPoint]:
    if os.environ.get("GEOBENCH_DISABLE_PLUGIN_AUTOLOAD") == "1":
        return [ep for ep in eps if ep.dist is not None and ep.dist.name == BUILTIN_DIST]
    only = os.environ.get("GEOBENCH_PLUGINS")
    if only:
        wanted = {name.strip() for name in only.split(",")} | {"core"}
        return [ep for ep in eps if ep.name in wanted]
    return eps


def load_registry(extra_plugins: tuple[object, ...] = ()) -> Registry:
    """Load every selected plugin (plus ``extra_plugins`` objects) into a fresh Registry."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs.Specs)
    origins: dict[object, tuple[str, str]] = {}
    for ep in _selected(sorted(entry_points(group=GROUP), key=lambda e: e.name)):
        dist = ep.dist.name if ep.dist is not None else "?"
        version = ep.dist.version if ep.dist is not None else "?"
        try:
            module = ep.load()
        except Exception as exc:  # a broken plugin must not take the others down
            print(f"warning: plugin {ep.name!r} (dist {dist} {version}) failed to load: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if pm.is_registered(module):
            continue
        pm.register(module, name=ep.name)
        origins[module] = (f"{ep.name} ({dist})", version)
    for plugin in extra_plugins:
        pm.register(plugin)
        origins[plugin] = (getattr(plugin, "__name__", type(plugin).__name__), "?")

    registry = Registry()
    for kind in KINDS:
        hook = getattr(pm.hook, f"register_{kind}")
        for impl in hook.get_hookimpls():
            origin, version = origins.get(impl.plugin, (impl.plugin_name, "?"))

            def register(name, factory, params=EmptyParams, doc="", fields=None, *, _k=kind,
                         _o=origin, _v=version):
                registry.add(Entry(_k, name, factory, params, doc.strip().split("\n")[0], _o, _v,
                                   dict(fields or {})))

            impl.function(register=register)
    return registry


@cache
def registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    return load_registry()
