"""Loads plugins into a pluggy ``PluginManager`` and their components into a ``Registry``.

The core's built-ins (``geobench.components.builtins``) load by module path. Every other plugin,
the bundled paper plugins included, loads from the ``geobench`` entry-point group:
``GEOBENCH_PLUGINS=a,b`` loads only the named entry points and
``GEOBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` none of them.

Isolation: a plugin that fails to import, whose hook raises (or calls ``sys.exit``), or that
registers a name another plugin already holds is reported in one warning naming the plugin
and its distribution, and skipped as a whole; a hookimpl whose name is no hook
(``register_head``) is reported with a did-you-mean and ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from importlib.metadata import PackageNotFoundError, entry_points, version
from typing import Any

import pluggy

from geobench.contract import hooks
from geobench.contract.errors import RegistryError, did_you_mean
from geobench.contract.hooks import HOOKS, KINDS
from geobench.contract.registry import EmptyParams, Entry, Registry

GROUP = "geobench"
BUILTINS = {"core": "geobench.components.builtins"}


@dataclass(frozen=True)
class PluginInfo:
    """A loaded plugin: its name, distribution, version and the hooks it implements."""

    name: str
    dist: str
    version: str
    hooks: tuple[str, ...]

    @property
    def origin(self) -> str:
        return f"{self.name} ({self.dist})"


class Plugins:
    """The pluggy manager and what each plugin it holds is (``info``, by plugin name)."""

    def __init__(self, extra_plugins: tuple[object, ...] = ()) -> None:
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hooks.Specs)
        self.info: dict[str, PluginInfo] = {}
        self.failed: dict[str, str] = {}  # plugin name -> why it is not loaded (one line)
        for name, module in BUILTINS.items():
            self._add(import_module(module), name, "geobench", _version("geobench"))
        self._load_entry_points()
        for plugin in extra_plugins:
            name = getattr(plugin, "__name__", type(plugin).__name__)
            self._add(plugin, name, "?", "?")

    def _load_entry_points(self) -> None:
        if os.environ.get("GEOBENCH_DISABLE_PLUGIN_AUTOLOAD") == "1":
            return
        only = os.environ.get("GEOBENCH_PLUGINS")
        wanted = {n.strip() for n in only.split(",") if n.strip()} if only else None
        found = sorted(entry_points(group=GROUP), key=lambda e: e.name)
        for name in sorted((wanted or set()) - {ep.name for ep in found} - set(BUILTINS)):
            warn(f"GEOBENCH_PLUGINS names {name!r}, which is no installed plugin"
                 f"{did_you_mean(name, [ep.name for ep in found])}")
        for ep in found:
            if wanted is not None and ep.name not in wanted:
                continue
            dist = ep.dist.name if ep.dist is not None else "?"
            version = ep.dist.version if ep.dist is not None else "?"
            if ep.name in self.info:
                warn(f"plugin {ep.name!r} (dist {dist} {version}) skipped: the name is taken "
                     f"by {self.info[ep.name].origin}")
                continue
            try:
                plugin = ep.load()
            except (Exception, SystemExit) as exc:  # a broken plugin must not take others down
                self._fail(ep.name, f"plugin {ep.name!r} (dist {dist} {version}) failed to "
                                    f"load: {describe_failure(exc)}")
                continue
            self._add(plugin, ep.name, dist, version)

    def _add(self, plugin: object, name: str, dist: str, version: str) -> None:
        for attr in dir(plugin):
            opts = self.pm.parse_hookimpl_opts(plugin, attr)
            if opts is not None and (opts.get("specname") or attr) not in HOOKS:
                warn(f"plugin {name!r} (dist {dist} {version}): {attr!r} is not a geobench "
                     f"hook{did_you_mean(attr, list(HOOKS))}; it is ignored")
        try:
            self.pm.register(plugin, name=name)
        except (Exception, SystemExit) as exc:
            self._fail(name, f"plugin {name!r} (dist {dist} {version}) skipped: "
                             f"{describe_failure(exc)}")
            return
        callers = self.pm.get_hookcallers(plugin) or []
        hooks = tuple(sorted(c.name for c in callers if c.name in HOOKS))
        self.info[name] = PluginInfo(name, dist, version, hooks)

    def drop(self, name: str, reason: str) -> None:
        """Unregister plugin ``name`` with a warning naming it and ``reason``."""
        info = self.info.pop(name)
        self.pm.unregister(name=name)
        self._fail(name, f"plugin {name!r} (dist {info.dist} {info.version}) skipped: {reason}")

    def _fail(self, name: str, message: str) -> None:
        """Warn that plugin ``name`` is not loaded, and keep ``message`` in ``failed``."""
        self.failed[name] = message
        warn(message)

    def call(self, name: str, hook: str, **kwargs: object) -> None:
        """Call plugin ``name``'s implementations of ``hook`` (from pluggy's hook caller)."""
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            if impl.plugin_name == name:
                impl.function(**{arg: kwargs[arg] for arg in impl.argnames})


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def describe_failure(exc: BaseException) -> str:
    """One line for an exception (a plugin's ``sys.exit`` included)."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def load_registry(extra_plugins: tuple[object, ...] = ()) -> Registry:
    """Load every selected plugin (plus ``extra_plugins`` objects) into a fresh Registry."""
    return build_registry(Plugins(extra_plugins))


def build_registry(plugins: Plugins) -> Registry:
    """Every plugin's components; a plugin whose hook fails or clashes is dropped whole. The
    registry's ``unloaded`` names the plugins that failed to load or were dropped."""
    registry = Registry()
    for name, info in list(plugins.info.items()):
        staged = Registry()
        try:
            for kind in KINDS:
                if f"register_{kind}" in info.hooks:
                    plugins.call(name, f"register_{kind}",
                                 register=_stager(staged, kind, info))
            registry.merge(staged)
        except (Exception, SystemExit) as exc:
            plugins.drop(name, str(exc) if isinstance(exc, RegistryError)
                         else describe_failure(exc))
    registry.unloaded = dict(plugins.failed)
    return registry


def _stager(staged: Registry, kind: str, info: PluginInfo):
    def register(name, factory, params=EmptyParams, doc="", fields=None, gives=None,
                 needs=None):
        if kind == "mirror_maps" and gives is None:
            gives = built_degree(factory)
        staged.add(Entry(kind, name, factory, params, (doc or "").strip().split("\n")[0],
                         info.origin, info.version, dict(fields or {}), gives, needs))

    return register


def built_degree(factory: Callable[[Any, Any], Any]) -> Callable[[Any], dict[str, float]]:
    """What a mirror map registered without ``gives`` gives: the horizon degree ``alpha`` of
    the map its factory builds for the params (outside a run: no context), where it has
    one; nothing where it has none or cannot be built so."""
    def gives(params: Any) -> dict[str, float]:
        try:
            alpha = getattr(factory(params, None), "alpha", None)
        except Exception:
            return {}
        return {} if alpha is None else {"horizon_degree": float(alpha)}

    return gives


@cache
def plugins() -> Plugins:
    """The process-wide plugin manager, loaded on first use (imports only plugin modules)."""
    return Plugins()


@cache
def registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    return build_registry(plugins())
