"""Suite YAML -> validated ``Suite`` -> expanded, fully resolved ``Cell``s.

Every error is a ``SuiteError`` with one line: ``file:line: dotted.path: what is wrong``.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import geobench
from geobench.config import (
    COMPONENT_KINDS,
    SHARED_ACROSS_ARMS,
    ArmSpec,
    Component,
    RunSpec,
    Suite,
)
from geobench.errors import describe_validation_error
from geobench.records import SINGLE_ARM, TRAIN_LOSS_KEY, Cell, parse_metric_key
from geobench.registry import Registry, RegistryError, did_you_mean
from geobench.yamlio import SuiteError, line_of, load_yaml

METRIC_ID = re.compile(r"[A-Za-z0-9_]+")
Loc = tuple[Any, ...]


@dataclass
class LoadedSuite:
    path: str
    suite: Suite
    lines: dict[Loc, int]

    def where(self, loc: Loc) -> str:
        line = line_of(self.lines, loc)
        dotted = format_loc(loc)
        return f"{self.path}{f':{line}' if line else ''}: {dotted}" if dotted else self.path

    def fail(self, loc: Loc, message: str) -> SuiteError:
        return SuiteError(f"{self.where(loc)}: {message}")


def format_loc(loc: Loc) -> str:
    if loc and loc[0] == "--set":
        return " ".join(str(p) for p in loc)
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_suite(path: str | Path) -> LoadedSuite:
    """Read and validate the suite's own structure (components are checked in ``expand``)."""
    path = str(path)
    if not Path(path).is_file():
        raise SuiteError(f"{path}: no such suite file")
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: a suite is a YAML mapping with at least 'name' and 'base'")
    loaded = LoadedSuite(path, None, lines)  # type: ignore[arg-type]
    try:
        loaded.suite = Suite.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise loaded.fail(tuple(err["loc"]), describe_validation_error(err, Suite)) from None
    return loaded


Accepts = Callable[[str, str], "set[str] | None"]


def deep_merge(base: Any, over: Any, accepts: Accepts | None = None, _key: str = "") -> Any:
    """``over`` merged into a copy of ``base``; mappings merge key by key, the rest replaces.

    Where a run-spec component (``data``, ``head``, ...) changes its ``name``, the inherited
    params are kept only if the new component accepts them (``accepts(kind, name)``), so
    ``{objective: {name: nscl}}`` over ``{name: cl, tau: 0.2}`` keeps ``tau`` while
    ``{augment: {name: simclr}}`` over ``{name: gaussian_noise, sigma: 0.1}`` drops ``sigma``.
    """
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return copy.deepcopy(over)
    if accepts is not None and _key in COMPONENT_KINDS and "name" in over \
            and over["name"] != base.get("name"):
        allowed = accepts(COMPONENT_KINDS[_key], over["name"])
        if allowed is not None:
            base = {k: v for k, v in base.items() if k in allowed}
    out = dict(base)
    for key, value in over.items():
        out[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
    return out


def merge_run(base: dict[str, Any], over: dict[str, Any], accepts: Accepts) -> dict[str, Any]:
    """Merge a partial run spec ``over`` into ``base`` (component-aware, see deep_merge)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = deep_merge(base.get(key), value, accepts, key) if key in base \
            else copy.deepcopy(value)
    return out


def assign(spec: dict[str, Any], key: str, value: Any, accepts: Accepts) -> None:
    """Set the dotted ``key`` of a run spec to a grid value; a mapping given for a whole
    component, or a new ``<component>.name``, merges as in ``merge_run``."""
    head, _, rest = key.partition(".")
    if head in COMPONENT_KINDS and rest in ("", "name") and isinstance(spec.get(head), dict):
        over = value if rest == "" else {"name": value}
        if isinstance(over, dict):
            spec[head] = deep_merge(spec[head], over, accepts, head)
            return
    set_dotted(spec, key, value)


def set_dotted(doc: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = doc
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = copy.deepcopy(value)


def get_dotted(doc: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


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
    for key, loc in assigned:
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


def _accepts(registry: Registry) -> Accepts:
    def accepts(kind: str, name: str) -> set[str] | None:
        try:
            return set(registry.get(kind, name).params.model_fields) | {"name"}
        except RegistryError:
            return None

    return accepts


def _seed_list(seeds: int | list[int]) -> list[int]:
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


def _check_key(loaded: LoadedSuite, loc: Loc, key: str, arms: dict[str, Any]) -> None:
    head, _, rest = key.partition(".")
    fields = list(RunSpec.model_fields)
    if head == "arms":
        arm = rest.partition(".")[0]
        if arm not in arms:
            raise loaded.fail(loc, f"unknown arm {arm!r}; arms: {', '.join(arms) or 'none'}")
    elif head not in fields:
        raise loaded.fail(
            loc, f"{key!r} is not a run-spec key{did_you_mean(head, fields)}; "
                 f"keys start with one of: {', '.join(fields)}, arms")


def _check_claims(loaded: LoadedSuite) -> None:
    """Every key a claim names is a run-spec key, and every arm it names exists."""
    suite = loaded.suite
    arms = list(suite.arms) or [SINGLE_ARM]
    for i, claim in enumerate(suite.claims):
        loc: Loc = ("claims", i)
        named = [parse_metric_key(claim.metric).arm] if "/" in claim.metric else []
        if "arm" in claim.where:
            named.append(str(claim.where["arm"]))
        if claim.compare is not None and claim.compare.arm is not None:
            named += claim.compare.arm
        for arm in named:
            if arm not in arms:
                raise loaded.fail(loc, f"claim {claim.id!r} names arm {arm!r}; "
                                       f"arms: {', '.join(arms)}")
        for key in claim.where:
            if key != "arm":
                _check_key(loaded, loc + ("where", key), key, suite.arms)
        if claim.compare is not None and claim.compare.key is not None:
            _check_key(loaded, loc + ("compare", "key"), claim.compare.key, suite.arms)
        if len(arms) > 1 and not named:
            raise loaded.fail(loc + ("metric",), f"claim {claim.id!r}: the suite has arms "
                              f"({', '.join(arms)}); name one as '<arm>/{claim.metric}', "
                              "'where: {arm: A}' or 'compare: {arm: [A, B]}'")


def _check_claim_metrics(loaded: LoadedSuite, registry: Registry, cells: list[Cell],
                         profile: str) -> None:
    """Every claim's metric is measured in the profile, with a field the metric declares."""
    specs = {m["id"]: m["name"] for c in cells[:1] for a in c.arms.values()
             for m in a["metrics"]}
    for i, claim in enumerate(loaded.suite.claims):
        parsed = parse_metric_key(claim.metric)
        mid, fld = parsed.metric, parsed.field
        if parsed.series == TRAIN_LOSS_KEY:
            continue
        loc: Loc = ("claims", i, "metric")
        if mid not in specs:
            raise loaded.fail(loc, f"claim {claim.id!r}: no metric with id {mid!r} in profile "
                                   f"{profile!r}{did_you_mean(mid, list(specs))}; ids: "
                                   f"{', '.join(specs) or 'none'} (and loss.train)")
        entry = registry.get("metrics", specs[mid])
        if entry.fields and entry.field_doc(fld) is None:
            raise loaded.fail(loc, f"claim {claim.id!r}: metric {specs[mid]!r} has no field "
                                   f"{fld!r}{did_you_mean(fld, list(entry.fields))}; fields: "
                                   f"{', '.join(entry.fields)}")


def _resolve_arm(
    registry: Registry, spec: dict[str, Any], fail: Any
) -> tuple[dict[str, Any], dict[str, str], ArmSpec]:
    """Validate one arm's spec; return it with every component's defaults filled in (the
    JSON record), the versions of the code it uses, and its typed form."""
    try:
        run = RunSpec.model_validate(spec)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise fail(tuple(err["loc"]), describe_validation_error(err, RunSpec)) from None
    resolved = run.model_dump(mode="json")
    versions: dict[str, str] = {}
    items = [(key, COMPONENT_KINDS[key], (key,)) for key in COMPONENT_KINDS
             if resolved.get(key) is not None]
    items += [(None, "metrics", ("metrics", i)) for i in range(len(resolved["metrics"]))]
    ids: dict[str, int] = {}
    typed: dict[str, Any] = {"init": None, "metrics": []}
    for key, kind, path in items:
        comp = resolved[path[0]] if len(path) == 1 else resolved["metrics"][path[1]]
        if not isinstance(comp, dict) or "name" not in comp:
            raise fail(path, f"a component is a mapping with 'name' (a registered {kind[:-1]})")
        named = {"name": comp["name"]}
        if kind == "metrics":
            named["id"] = _metric_id(comp, path, ids, fail)
        try:
            entry = registry.get(kind, comp["name"])
            params = entry.params.model_validate({k: v for k, v in comp.items()
                                                  if k not in named})
        except RegistryError as exc:
            raise fail(path + ("name",), str(exc)) from None
        except ValidationError as exc:
            err = exc.errors()[0]
            raise fail(path + tuple(err["loc"]),
                       describe_validation_error(err, entry.params)) from None
        full = {**named, **params.model_dump(mode="json")}
        component = Component(comp["name"], params, named.get("id"))
        if len(path) == 1:
            resolved[path[0]] = full
            typed[key] = component
        else:
            resolved["metrics"][path[1]] = full
            typed["metrics"].append(component)
        versions[entry.origin] = entry.version
    typed["metrics"] = tuple(typed["metrics"])
    return resolved, versions, ArmSpec(train=run.train, **typed)


def _metric_id(comp: dict[str, Any], path: Loc, seen: dict[str, int], fail: Any) -> str:
    """The metric instance's id (default: its name), unique within the arm."""
    mid = comp.get("id", comp["name"])
    if not isinstance(mid, str) or not METRIC_ID.fullmatch(mid):
        raise fail(path + ("id",), f"metric id {mid!r}: ids match {METRIC_ID.pattern} "
                                   "(letters, digits, '_')")
    if mid in seen:
        raise fail(path + ("id",), f"metric id {mid!r} is used twice (metrics[{seen[mid]}] "
                                   "too); give each instance its own 'id'")
    seen[mid] = path[1]
    return mid


def cell_id(payload: dict[str, Any]) -> str:
    """Stable id: sha256 of the canonical JSON (sorted keys, no whitespace), 16 hex digits."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def expand(loaded: LoadedSuite, registry: Registry, profile: str = "smoke",
           overrides: dict[str, Any] | None = None) -> list[Cell]:
    """All cells of the suite under ``profile``, validated and resolved.

    ``overrides`` (dotted key -> value, the command line's ``--set``) apply to every cell
    after the grid, as single-valued axes.
    """
    suite = loaded.suite
    if profile not in suite.profiles and profile != "smoke":
        names = list(suite.profiles)
        raise loaded.fail(("profiles",), f"no profile {profile!r}{did_you_mean(profile, names)}; "
                                         f"profiles: {', '.join(names) or 'none'}")
    prof = suite.profiles.get(profile)
    ploc: Loc = ("profiles", profile)
    accepts = _accepts(registry)
    base = merge_run(suite.base, prof.base, accepts) if prof else copy.deepcopy(suite.base)
    arm_names = list(suite.arms) or [SINGLE_ARM]
    arm_over = {a: merge_run(suite.arms.get(a, {}), prof.arms.get(a, {}) if prof else {},
                             accepts) for a in arm_names}
    grid = [(("grid", k), k, v) for k, v in suite.grid.items() if not (prof and k in prof.grid)]
    grid += [(ploc + ("grid", k), k, v) for k, v in (prof.grid.items() if prof else [])]
    use_prof_zip = prof is not None and prof.zip is not None
    zips = prof.zip if use_prof_zip else suite.zip
    zloc: Loc = (ploc + ("zip",)) if use_prof_zip else ("zip",)
    exclude = prof.exclude if prof and prof.exclude is not None else suite.exclude
    seeds = _seed_list(prof.seeds if prof and prof.seeds is not None else suite.seeds)

    axes: list[list[list[tuple[str, Any, Loc]]]] = []
    for loc, key, values in grid:
        _check_key(loaded, loc, key, suite.arms)
        if not values:
            raise loaded.fail(loc, "a grid axis needs at least one value")
        axes.append([[(key, v, loc + (i,))] for i, v in enumerate(values)])
    for g, group in enumerate(zips):
        lengths = {len(v) for v in group.values()}
        if len(lengths) != 1:
            raise loaded.fail(zloc + (g,), "zipped lists must have equal lengths")
        for key in group:
            _check_key(loaded, zloc + (g, key), key, suite.arms)
        n = lengths.pop()
        axes.append([[(k, vals[i], zloc + (g, k, i)) for k, vals in group.items()]
                     for i in range(n)])

    for key, value in (overrides or {}).items():
        _check_key(loaded, ("--set", key), key, suite.arms)
        axes.append([[(key, value, ("--set", key))]])

    _check_claims(loaded)
    cells: list[Cell] = []
    for combo in itertools.product(*axes):
        assignment = [item for group in combo for item in group]
        varied = {key: value for key, value, _ in assignment}
        if any(all(varied.get(k, get_dotted(base, k)) == v for k, v in ex.items())
               for ex in exclude):
            continue
        arms, specs, versions = {}, {}, {"geobench": geobench.__version__}
        for arm in arm_names:
            spec = merge_run(base, arm_over[arm], accepts)
            mine = f"arms.{arm}."
            assigned = [(k.removeprefix(mine), v, loc) for k, v, loc in assignment
                        if not k.startswith("arms.") or k.startswith(mine)]
            for key, value, _ in assigned:
                assign(spec, key, value, accepts)
            sources = [_Source((ploc + ("arms", arm)), prof.arms.get(arm, {}) if prof else {}),
                       _Source(("arms", arm), suite.arms.get(arm, {})),
                       _Source(ploc + ("base",), prof.base if prof else {}),
                       _Source(("base",), suite.base)]

            def fail(path: Loc, message: str, _a=assigned, _s=sources) -> SuiteError:
                return loaded.fail(_origin(path, [(k, loc) for k, _, loc in _a], _s), message)

            arms[arm], used, specs[arm] = _resolve_arm(registry, spec, fail)
            versions.update(used)
        first = arms[arm_names[0]]
        for arm in arm_names[1:]:
            for key in SHARED_ACROSS_ARMS:
                if arms[arm][key] != first[key]:
                    raise loaded.fail(("arms", arm, key),
                                      f"arms train in lockstep and must share '{key}'")
        for seed in seeds:
            payload = {"suite": suite.name, "profile": profile, "trial_seed": seed,
                       "arms": arms, "versions": versions}
            cells.append(Cell(cell_id(payload), suite.name, profile, seed, arms,
                              {**varied, "trial_seed": seed}, versions, specs))
    _check_claim_metrics(loaded, registry, cells, profile)
    return cells
