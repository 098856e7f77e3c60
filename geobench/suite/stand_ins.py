"""Stored results read without the plugin that produced them.

A store records every cell's resolved arms (each component with all its params, defaults
filled in) and the versions of the plugins it used. Where those name a component that no
loaded plugin registers, ``with_stand_ins`` returns a ``StoredRegistry``: the loaded registry
plus a *stand-in* for each such component, whose params are the values the suite gives, as
given (the defaults are the plugin's, which only the stored cells know). A suite expanded
through it (``suite.expand``) yields cells whose records hold a stand-in's given values only;
``StoredRegistry.complete`` puts in each the stored cell of the same suite, profile and
trial seed whose record agrees with every value the suite gives and whose versions of the
loaded plugins are these: its id, record and versions, so the cells keep the ids the plugin
gave them (a stored id is used only where the record hashes to it). A grid point no stored
cell agrees with keeps an id of its given values, which no stored cell has: it reads as
missing. Nothing built through a stand-in runs: only reading commands use one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from geobench.contract.errors import RegistryError
from geobench.contract.param_models import FieldDoc, nested_kinds, nested_specs
from geobench.contract.registry import Entry, Registry
from geobench.contract.spec import COMPONENT_KINDS
from geobench.records import Cell

StoredConfig = tuple[str, dict[str, Any], float | None]
"""A stored cell as ``Store.configs`` reads it: its id, its recorded config, when it
finished."""

CORE = "geobench"  # the versions key of the core's own version, never a plugin's


class StandInParams(BaseModel):
    """A stand-in's params: the fields its stored records hold, each present only where the
    suite gives it (the plugin's defaults are unknown here)."""

    model_config = ConfigDict(extra="allow")

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return super().model_dump(**{**kwargs, "exclude_unset": True})


@dataclass
class StandIn:
    """What the stored records say of one component no loaded plugin registers. A metric's
    fields read as undeclared (no unit, no direction: the plugin declares them), and the
    page says so."""

    kind: str
    name: str
    fields: set[str] = field(default_factory=set)
    origins: dict[str, str] = field(default_factory=dict)  # origin -> version, not loaded

    def entry(self) -> Entry:
        params = create_model(f"StandIn_{self.name}", __base__=StandInParams,
                              **{f: (Any, None) for f in sorted(self.fields)})
        unknown = FieldDoc(f"(not declared here: {self.plugin} is not loaded)")
        return Entry(self.kind, self.name, self._refuse, params,
                     f"read from the store: {self.plugin} is not loaded", self.plugin, "?",
                     {"*": unknown} if self.kind == "metrics" else {})

    @property
    def plugin(self) -> str:
        """The plugins the stored cells used it from, with their versions."""
        return ", ".join(f"{o} {v}" for o, v in sorted(self.origins.items())) or "its plugin"

    def _refuse(self, params: BaseModel, ctx: Any) -> Any:
        raise RegistryError(f"{self.kind[:-1]} {self.name!r} is read from the store only: "
                            f"{self.plugin} is not loaded")


@dataclass
class StoredRegistry(Registry):
    """A registry whose stand-ins (``stand_ins``, by kind and name) come from ``stored``;
    ``loaded``: the origins of the loaded plugins; ``used``: the stand-ins a suite used."""

    stored: list[StoredConfig] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)
    stand_ins: dict[tuple[str, str], StandIn] = field(default_factory=dict)
    used: dict[tuple[str, str], StandIn] = field(default_factory=dict)

    def get(self, kind: str, name: str) -> Entry:
        stand_in = self.stand_ins.get((kind, name))
        if stand_in is not None:
            self.used[kind, name] = stand_in
        return super().get(kind, name)

    def missing(self) -> dict[str, str]:
        """The plugins the used stand-ins come from: origin -> version."""
        return {o: v for s in self.used.values() for o, v in s.origins.items()}

    def complete(self, cells: list[Cell], cell_id: Callable[[dict[str, Any]], str]
                 ) -> list[Cell]:
        """Each of ``cells`` as the stored cell its record agrees with (see the module), a
        stored cell whose payload ``cell_id`` hashes to its id. A stored cell that several
        grid points agree with is the one that gives the most values (the others leave to
        the plugin's defaults what it gives; none where two give as many); a grid point
        with several stored cells (other versions of the plugin) is the one finished last."""
        by_key = self._stored_by_key()
        owners: dict[str, list[int]] = {}
        for i, cell in enumerate(cells):
            for stored in by_key.get(_key(cell), []):
                if self._agrees(cell, stored, cell_id):
                    owners.setdefault(stored[0], []).append(i)
        chosen: dict[int, StoredConfig] = {}
        for stored in self.stored:
            points = owners.get(stored[0], [])
            given = sorted(((_leaves(cells[i].arms), i) for i in points), reverse=True)
            if not given or (len(given) > 1 and given[0][0] == given[1][0]):
                continue
            i = given[0][1]
            if i not in chosen or (stored[2] or 0.0) > (chosen[i][2] or 0.0):
                chosen[i] = stored
        return [replace(c, id=s[0], arms=s[1]["arms"], versions=s[1]["versions"])
                if (s := chosen.get(i)) is not None else c for i, c in enumerate(cells)]

    def _stored_by_key(self) -> dict[tuple[Any, ...], list[StoredConfig]]:
        by_key: dict[tuple[Any, ...], list[StoredConfig]] = {}
        for stored in self.stored:
            config = stored[1]
            by_key.setdefault((config.get("suite"), config.get("profile"),
                               config.get("trial_seed")), []).append(stored)
        return by_key

    def _agrees(self, cell: Cell, stored: StoredConfig,
                cell_id: Callable[[dict[str, Any]], str]) -> bool:
        """The stored cell hashes to its id, has ``cell``'s arms, agrees with every value
        its record holds and has its versions of the loaded plugins."""
        cid, config, _ = stored
        arms, versions = config.get("arms"), config.get("versions")
        if not isinstance(arms, dict) or not isinstance(versions, dict) \
                or list(arms) != list(cell.arms) or not _within(cell.arms, arms):
            return False
        if any(versions.get(o) != v for o, v in cell.versions.items() if o in self.loaded):
            return False
        payload = {"suite": cell.suite, "profile": cell.profile, "trial_seed": cell.trial_seed,
                   "arms": arms, "versions": versions}
        return cell_id(payload) == cid


def _key(cell: Cell) -> tuple[Any, ...]:
    return cell.suite, cell.profile, cell.trial_seed


def _leaves(doc: Any) -> int:
    """How many values ``doc`` gives (the scalars of its mappings and lists)."""
    if isinstance(doc, dict):
        return sum(_leaves(v) for v in doc.values())
    if isinstance(doc, list):
        return sum(_leaves(v) for v in doc)
    return 1


def _within(given: Any, stored: Any) -> bool:
    """Every value of ``given`` is in ``stored`` at the same place (mappings may hold more
    keys; lists are as long; ``True`` is not ``1``)."""
    if isinstance(given, dict):
        return isinstance(stored, dict) and all(k in stored and _within(v, stored[k])
                                                for k, v in given.items())
    if isinstance(given, list):
        return isinstance(stored, list) and len(given) == len(stored) \
            and all(_within(g, s) for g, s in zip(given, stored))
    return isinstance(given, bool) == isinstance(stored, bool) and given == stored


def with_stand_ins(registry: Registry, stored: list[StoredConfig]) -> Registry:
    """``registry``, or, where ``stored`` cells used components it lacks, a
    ``StoredRegistry`` with a stand-in for each."""
    loaded, found = _origins(registry), _stand_ins(registry, stored)
    if not found:
        return registry
    out = StoredRegistry({k: dict(v) for k, v in registry.entries.items()},
                         dict(registry.unloaded), dict(registry.absent), stored, loaded | {CORE},
                         found)
    for stand_in in found.values():
        out.add(stand_in.entry())
    return out


def with_absent(registry: Registry, stored: list[StoredConfig]) -> Registry:
    """``registry``, where ``stored`` cells used components it lacks, a copy that names, for
    each, the plugin the store says provided it (for a command that runs cells)."""
    found = _stand_ins(registry, stored)
    if not found:
        return registry
    absent = {key: f"the store's cells used it from {s.plugin}, which is not loaded"
              for key, s in found.items()}
    return Registry(registry.entries, registry.unloaded, {**registry.absent, **absent})


def _origins(registry: Registry) -> set[str]:
    return {e.origin for entries in registry.entries.values() for e in entries.values()}


def _stand_ins(registry: Registry, stored: list[StoredConfig]
               ) -> dict[tuple[str, str], StandIn]:
    """What ``stored`` says of each component (kind, name) that ``registry`` lacks."""
    loaded = _origins(registry)
    found: dict[tuple[str, str], StandIn] = {}
    for _, config, _ in stored:
        versions = config.get("versions") if isinstance(config.get("versions"), dict) else {}
        absent = {o: str(v) for o, v in versions.items() if o not in loaded and o != CORE}
        for arm in (config.get("arms") or {}).values():
            for kind, comp in _components(arm):
                _visit(registry, kind, comp, absent, found)
    return found


def _components(arm: Any) -> Iterator[tuple[str, Any]]:
    if not isinstance(arm, dict):
        return
    for key, kind in COMPONENT_KINDS.items():
        yield kind, arm.get(key)
    for metric in arm.get("metrics") or []:
        yield "metrics", metric


def _visit(registry: Registry, kind: str, comp: Any, absent: dict[str, str],
           found: dict[tuple[str, str], StandIn]) -> None:
    """Note ``comp`` (a recorded component of ``kind``) where ``registry`` lacks it, else
    the components nested in it."""
    if not isinstance(comp, dict) or not isinstance(comp.get("name"), str):
        return
    entry = registry.entries.get(kind, {}).get(comp["name"])
    if entry is None:
        stand_in = found.setdefault((kind, comp["name"]), StandIn(kind, comp["name"]))
        stand_in.fields |= set(comp) - {"name", "id"}
        stand_in.origins.update(absent)
        return
    for name, inner in nested_kinds(entry.params).items():
        try:
            specs = nested_specs(entry.params, name, comp.get(name))
        except (AttributeError, TypeError):
            continue
        for _, spec in specs:
            _visit(registry, inner, spec, absent, found)
