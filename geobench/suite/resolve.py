"""One grid point resolved: every arm's spec merged, validated by its components' params
models, typed for the engine, and errors traced back to where the file wrote the value."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from geobench.contract.param_models import nested_kinds, nested_specs
from geobench.contract.registry import Registry, RegistryError
from geobench.contract.spec import COMPONENT_KINDS, SHARED_ACROSS_ARMS, ArmSpec, Component, RunSpec
from geobench.suite import checks
from geobench.suite.compatibility import check_needs
from geobench.suite.load import LoadedSuite, Loc, validation_errors
from geobench.suite.merge import Accepts, View, assign, merge_run, overlay_run
from geobench.suite.problems import Problems
from geobench.suite.schema import MAX_NAME
from geobench.suite.stand_ins import StoredRegistry
from geobench.suite.yamlio import SuiteError
from geobench.version import __version__

METRIC_ID = re.compile(r"[A-Za-z0-9_]+")
MAX_NESTING = 8  # components inside components inside ...


Assignment = list[tuple[str, Any, Loc]]


def _depth(doc: Any, path: tuple[str, ...]) -> int:
    depth = 0
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            break
        doc, depth = doc[part], depth + 1
    return depth


@dataclass
class _Source:
    loc: Loc
    doc: dict[str, Any]


def _origin(path: tuple[Any, ...], assigned: list[tuple[str, Loc]], sources: list[_Source]) -> Loc:
    """Where in the file the value at ``path`` (inside an arm spec) was written."""
    dotted = ".".join(str(p) for p in path)
    for key, loc in reversed(assigned):  # the last assignment is the one that holds
        if dotted == key or dotted.startswith(key + ".") or key.startswith(dotted + "."):
            return loc
    best: tuple[int, Loc] = (-1, ("base",) + tuple(path))
    for src in sources:  # highest priority first
        depth = _depth(src.doc, tuple(str(p) for p in path))
        if depth > best[0] and depth > 0:
            best = (depth, src.loc + tuple(path[:depth]) + tuple(path[depth:]))
        if depth == len(path):
            break
    return best[1]


def _resolve_arm(
    registry: Registry, spec: dict[str, Any], fail: Any
) -> tuple[dict[str, Any], dict[str, str], ArmSpec]:
    """Validate one arm's spec; return it with every component's defaults filled in (the
    JSON record), the versions of the code it uses, and its typed form."""
    bad = checks.non_finite(spec)
    if bad is not None:  # before model_dump(mode="json"), which writes NaN and inf as null
        raise fail(bad, "must be a finite number, not NaN or infinity")
    try:
        run = RunSpec.model_validate(spec)
    except ValidationError as exc:
        raise validation_errors(exc, spec, fail, RunSpec) from None
    resolved = run.model_dump(mode="json")
    if not run.replicate:  # the record (and the cell id) names a replicate only when set
        del resolved["replicate"]
    versions: dict[str, str] = {}
    items = [(key, COMPONENT_KINDS[key], (key,)) for key in COMPONENT_KINDS
             if resolved.get(key) is not None]
    items += [(None, "metrics", ("metrics", i)) for i in range(len(resolved["metrics"]))]
    ids: dict[str, int] = {}
    typed: dict[str, Any] = {"init": None, "metrics": []}
    problems = Problems()
    for key, kind, path in items:
        with problems.check():  # each component's problems, whatever the others'
            comp = resolved[path[0]] if len(path) == 1 else resolved["metrics"][path[1]]
            if not isinstance(comp, dict) or not isinstance(comp.get("name"), str):
                raise fail(path, f"a component is a mapping with 'name' (a registered "
                                 f"{kind[:-1]})")
            named = {"name": comp["name"]}
            if kind == "metrics":
                named["id"] = _metric_id(comp, path, ids, fail)
            given = {k: v for k, v in comp.items() if k not in named}
            params = _component(registry, kind, comp["name"], given, path, fail, versions)
            if kind == "datasets":
                checks.check_data(params, fail)
            full = {**named, **params.model_dump(mode="json")}
            component = Component(comp["name"], params, named.get("id"))
            if len(path) == 1:
                resolved[path[0]] = full
                typed[key] = component
            else:
                resolved["metrics"][path[1]] = full
                typed["metrics"].append(component)
    problems.raise_found()
    typed["metrics"] = tuple(typed["metrics"])
    return resolved, versions, ArmSpec(train=run.train, replicate=run.replicate, **typed)


def resolve_record(registry: Registry, record: dict[str, Any], where: str
                   ) -> tuple[dict[str, Any], ArmSpec]:
    """An arm's record edited after expansion (a shortened preflight run), validated again:
    the resolved record and its typed spec; a bad value raises a one-line ``SuiteError``
    naming ``where`` and the key."""
    def fail(path: Loc, message: str) -> SuiteError:
        return SuiteError(f"{where}: {'.'.join(map(str, path))}: {message}")

    resolved, _, spec = _resolve_arm(registry, record, fail)
    return resolved, spec


def _component(registry: Registry, kind: str, name: str, given: dict[str, Any], path: Loc,
               fail: Any, versions: dict[str, str], within: tuple[str, ...] = ()) -> BaseModel:
    """The params of component ``name`` of ``kind`` validated by its model, with the specs of
    its ``Nested`` fields validated in turn and their defaults filled in; adds the version
    of every plugin involved to ``versions``. ``within``: the components this one is nested
    in, at most ``MAX_NESTING`` (defaults that name their own component never end)."""
    here = f"{kind[:-1]} {name!r}"
    if len(within) >= MAX_NESTING:
        raise fail(path, f"components nested more than {MAX_NESTING} deep: "
                         f"{' > '.join([*within, here])}")
    try:
        entry = registry.get(kind, name)
        params = entry.params.model_validate(given)
    except RegistryError as exc:
        raise fail(path + ("name",), str(exc)) from None
    except ValidationError as exc:
        raise validation_errors(exc, given, lambda at, message: fail(path + at, message),
                                entry.params) from None
    bad = checks.non_finite(params.model_dump())
    if bad is not None:
        raise fail(path + bad, "must be a finite number, not NaN or infinity")
    versions[entry.origin] = entry.version
    filled = {}
    problems = Problems()
    for field, inner_kind in nested_kinds(entry.params).items():
        given_value = getattr(params, field)
        value = copy.deepcopy(list(given_value) if isinstance(given_value, tuple) else given_value)
        for loc, spec in nested_specs(entry.params, field, value):
            at = path + (field, *loc)
            with problems.check():  # each nested spec's problems, whatever the others'
                if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                    raise fail(at, f"a nested component is a mapping with 'name' (a "
                                   f"registered {inner_kind[:-1]})")
                inner = _component(registry, inner_kind, spec["name"],
                                   {k: v for k, v in spec.items() if k != "name"}, at, fail,
                                   versions, (*within, here))
                full = {"name": spec["name"], **inner.model_dump(mode="json")}
                if loc:
                    value[loc[0]] = full
                else:
                    value = full
        filled[field] = tuple(value) if isinstance(given_value, tuple) else value
    problems.raise_found()
    return params.model_copy(update=filled) if filled else params


def _metric_id(comp: dict[str, Any], path: Loc, seen: dict[str, int], fail: Any) -> str:
    """The metric instance's id (default: its name), unique within the arm."""
    mid = comp.get("id", comp["name"])
    if not isinstance(mid, str) or not METRIC_ID.fullmatch(mid) or len(mid) > MAX_NAME:
        raise fail(path + ("id",), f"metric id {str(mid)[:40]!r}: ids match "
                                   f"{METRIC_ID.pattern} (letters, digits, '_'), at most "
                                   f"{MAX_NAME} characters")
    if mid in seen:
        raise fail(path + ("id",), f"metric id {mid!r} is used twice (metrics[{seen[mid]}] "
                                   "too); give each instance its own 'id'")
    seen[mid] = path[1]
    return mid


def resolve_cell(loaded: LoadedSuite, registry: Registry, view: View, assignment: Assignment,
                  accepts: Accepts, base_first: bool = False
                  ) -> tuple[dict[str, Any], dict[str, ArmSpec], dict[str, str]]:
    """Every arm of one grid point: resolved records, typed specs and code versions.

    ``base_first``: check the base's values as written instead, each arm only completing
    what the base leaves out, so a base value that every arm overrides (``head.activation:
    gleu`` under arms that each set their own) is still validated; what the components need
    of each other is checked on the arms as they run, not on this mixture (nor through
    stand-ins, whose cells ran already)."""
    suite, prof = loaded.suite, view.prof
    arms, specs, versions = {}, {}, {"geobench": __version__}
    fails = {}
    problems = Problems()
    for arm in view.arms:
        spec = merge_run(view.base, view.arms[arm], accepts)
        mine = f"arms.{arm}."
        assigned = [(k.removeprefix(mine), v, loc) for k, v, loc in assignment
                    if not k.startswith("arms.") or k.startswith(mine)]
        for key, value, _ in assigned:
            assign(spec, key, value, accepts)
        if base_first:  # every value from here on is the base's
            spec, assigned = overlay_run(spec, view.base, accepts), []
        arm_sources = [_Source(view.loc + ("arms", arm), prof.arms.get(arm, {}) if prof else {}),
                       _Source(("arms", arm), suite.arms.get(arm, {}))]
        base_sources = [_Source(view.loc + ("base",), prof.base if prof else {}),
                        _Source(("base",), suite.base)]
        sources = base_sources + arm_sources if base_first else arm_sources + base_sources

        def fail(path: Loc, message: str, _a=assigned, _s=sources) -> SuiteError:
            return loaded.fail(_origin(path, [(k, loc) for k, _, loc in _a], _s), message)

        with problems.check():  # each arm's problems, whatever the others'
            arms[arm], used, specs[arm] = _resolve_arm(registry, spec, fail)
            versions.update(used)
            fails[arm] = fail
    problems.raise_found()
    names = list(arms)
    for arm in names[1:]:
        for key in SHARED_ACROSS_ARMS:
            if arms[arm][key] != arms[names[0]][key]:
                raise loaded.fail(("arms", arm, key),
                                  f"arms train in lockstep and must share '{key}'")
    if not base_first and not isinstance(registry, StoredRegistry):  # stored cells: they ran
        seen = set()  # a need that fails alike on several arms: the first arm's line
        for arm, fail in fails.items():  # the base's values are checked there, not the mix
            try:
                check_needs(registry, specs, arm, fail)
            except SuiteError as exc:
                alike = (exc.line, str(exc).replace(f" of arm {arm!r}", "", 1))
                if alike not in seen:
                    problems.add(exc)
                seen.add(alike)
        problems.raise_found()
    return arms, specs, versions
