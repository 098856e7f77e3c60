"""Suite YAML -> validated ``Suite`` -> expanded, fully resolved ``Cell``s.

Every error is a ``SuiteError`` with one line: ``file:line: dotted.path: what is wrong``.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import geobench
from geobench import suite_checks as checks
from geobench.config import (
    COMPONENT_KINDS,
    SHARED_ACROSS_ARMS,
    ArmSpec,
    Component,
    Profile,
    RunSpec,
    Suite,
)
from geobench.errors import describe_validation_error, error_loc
from geobench.records import SINGLE_ARM, Cell
from geobench.registry import Registry, RegistryError, did_you_mean
from geobench.yamlio import SuiteError, line_of, load_yaml

METRIC_ID = re.compile(r"[A-Za-z0-9_]+")
CELL_LIMIT = 10_000
"""Most cells one profile may expand to, unless raised (``--cell-limit``)."""
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
        raise loaded.fail(error_loc(err, data), describe_validation_error(err, Suite)) from None
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


def _accepts(registry: Registry) -> Accepts:
    def accepts(kind: str, name: str) -> set[str] | None:
        if not isinstance(name, str):
            return None
        try:
            return set(registry.get(kind, name).params.model_fields) | {"name"}
        except RegistryError:
            return None

    return accepts


def _seed_list(seeds: int | list[int]) -> list[int]:
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


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
        err = exc.errors()[0]
        raise fail(error_loc(err, spec), describe_validation_error(err, RunSpec)) from None
    resolved = run.model_dump(mode="json")
    if not run.replicate:  # the record (and the cell id) names a replicate only when set
        del resolved["replicate"]
    versions: dict[str, str] = {}
    items = [(key, COMPONENT_KINDS[key], (key,)) for key in COMPONENT_KINDS
             if resolved.get(key) is not None]
    items += [(None, "metrics", ("metrics", i)) for i in range(len(resolved["metrics"]))]
    ids: dict[str, int] = {}
    typed: dict[str, Any] = {"init": None, "metrics": []}
    for key, kind, path in items:
        comp = resolved[path[0]] if len(path) == 1 else resolved["metrics"][path[1]]
        if not isinstance(comp, dict) or not isinstance(comp.get("name"), str):
            raise fail(path, f"a component is a mapping with 'name' (a registered {kind[:-1]})")
        named = {"name": comp["name"]}
        if kind == "metrics":
            named["id"] = _metric_id(comp, path, ids, fail)
        given = {k: v for k, v in comp.items() if k not in named}
        try:
            entry = registry.get(kind, comp["name"])
            params = entry.params.model_validate(given)
        except RegistryError as exc:
            raise fail(path + ("name",), str(exc)) from None
        except ValidationError as exc:
            err = exc.errors()[0]
            raise fail(path + error_loc(err, given),
                       describe_validation_error(err, entry.params)) from None
        bad = checks.non_finite(params.model_dump())
        if bad is not None:
            raise fail(path + bad, "must be a finite number, not NaN or infinity")
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
        versions[entry.origin] = entry.version
    typed["metrics"] = tuple(typed["metrics"])
    return resolved, versions, ArmSpec(train=run.train, replicate=run.replicate, **typed)


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


@dataclass
class _View:
    """The suite seen through one profile (``prof`` None: no profile, the suite as
    written): its base and arm overrides merged."""

    name: str
    prof: Profile | None
    base: dict[str, Any]
    arms: dict[str, dict[str, Any]]

    @property
    def loc(self) -> Loc:
        return ("profiles", self.name)


def _view(loaded: LoadedSuite, name: str, prof: Profile | None, accepts: Accepts) -> _View:
    suite = loaded.suite
    base = merge_run(suite.base, prof.base, accepts) if prof else copy.deepcopy(suite.base)
    arms = {a: merge_run(suite.arms.get(a, {}), prof.arms.get(a, {}) if prof else {}, accepts)
            for a in list(suite.arms) or [SINGLE_ARM]}
    return _View(name, prof, base, arms)


Assignment = list[tuple[str, Any, Loc]]
Axis = list[Assignment]


def _axes(loaded: LoadedSuite, view: _View, overrides: dict[str, Any]) -> list[Axis]:
    """The profile's grid, zip groups and ``--set`` overrides as axes of the product; every
    key is checked and varied by one axis only."""
    suite, prof = loaded.suite, view.prof
    grid = [(("grid", k), k, v) for k, v in suite.grid.items() if not (prof and k in prof.grid)]
    grid += [(view.loc + ("grid", k), k, v) for k, v in (prof.grid.items() if prof else [])]
    use_prof_zip = prof is not None and prof.zip is not None
    zips = prof.zip if use_prof_zip else suite.zip
    zloc: Loc = (view.loc + ("zip",)) if use_prof_zip else ("zip",)
    axes: list[Axis] = []
    varied: dict[str, Loc] = {}
    for loc, key, values in grid:
        checks.check_key(loaded, loc, key, suite.arms)
        if not values:
            raise loaded.fail(loc, "a grid axis needs at least one value")
        axes.append([[(key, v, loc + (i,))] for i, v in enumerate(values)])
        _check_once(loaded, varied, key, loc)
    for g, group in enumerate(zips):
        lengths = {len(v) for v in group.values()}
        if not group or 0 in lengths:
            raise loaded.fail(zloc + (g,), "a zip group needs at least one key, each with at "
                                           "least one value")
        if len(lengths) != 1:
            raise loaded.fail(zloc + (g,), "zipped lists must have equal lengths (got "
                                           f"{', '.join(str(len(v)) for v in group.values())})")
        for key in group:
            checks.check_key(loaded, zloc + (g, key), key, suite.arms)
            _check_once(loaded, varied, key, zloc + (g, key))
        n = lengths.pop()
        axes.append([[(k, vals[i], zloc + (g, k, i)) for k, vals in group.items()]
                     for i in range(n)])
    for key, value in overrides.items():
        checks.check_key(loaded, ("--set", key), key, suite.arms)
        axes.append([[(key, value, ("--set", key))]])
    return axes


def _left_to_grid(view: _View, axes: list[Axis]) -> Assignment:
    """For checking a base and arms as written: the first value of each grid or zip key an
    arm leaves unset (``optimizer: {name: sgd}`` with ``grid: {optimizer.lr: [...]}``), as
    an assignment to that arm alone, so a value that is written is checked as written."""
    out: Assignment = []
    for arm, over in view.arms.items():
        written = deep_merge(view.base, over)
        for key, value, loc in (item for axis in axes for item in axis[0]):
            head, _, rest = key.partition(".")
            if head == "arms":
                target, _, inner = rest.partition(".")
                if target == arm and _unset(written, inner):
                    out.append((key, value, loc))
            elif _unset(written, key):
                out.append((f"arms.{arm}.{key}", value, loc))
    return out


def _unset(doc: dict[str, Any], key: str) -> bool:
    """The dotted ``key`` is absent from ``doc`` and no part of its path is written as
    something other than a mapping (``optimizer: sgd`` is reported as written)."""
    for part in key.split("."):
        if not isinstance(doc, dict):
            return False
        if part not in doc:
            return True
        doc = doc[part]
    return False


def _check_once(loaded: LoadedSuite, varied: dict[str, Loc], key: str, loc: Loc) -> None:
    """No key is varied twice, nor a key and a key inside it (``data`` and ``data.n_train``)."""
    for other, where in varied.items():
        if key == other or key.startswith(other + ".") or other.startswith(key + "."):
            raise loaded.fail(loc, f"{key!r} is varied twice (also {format_loc(where)}); "
                                   "vary each key in one grid axis or zip group")
    varied[key] = loc


def _check_count(loaded: LoadedSuite, view: _View, axes: list[Axis], seeds: int,
                 seeds_loc: Loc, limit: int) -> None:
    """Refuse, before building any cell, a profile with more than ``limit`` cells (the
    product of the axis lengths and the seeds: exclusions are not subtracted)."""
    count = math.prod(len(axis) for axis in axes) * seeds
    if count <= limit:
        return
    sizes = " x ".join([str(len(axis)) for axis in axes if len(axis) > 1] + [f"{seeds} seeds"])
    loc = seeds_loc if seeds > limit else max(axes, key=len)[0][0][2][:-1]
    raise loaded.fail(loc, f"profile {view.name!r} expands to {count} cells ({sizes}); the "
                           f"limit is {limit} (raise it with --cell-limit N)")


def _resolve_cell(loaded: LoadedSuite, registry: Registry, view: _View, assignment: Assignment,
                  accepts: Accepts) -> tuple[dict[str, Any], dict[str, ArmSpec], dict[str, str]]:
    """Every arm of one grid point: resolved records, typed specs and code versions."""
    suite, prof = loaded.suite, view.prof
    arms, specs, versions = {}, {}, {"geobench": geobench.__version__}
    for arm in view.arms:
        spec = merge_run(view.base, view.arms[arm], accepts)
        mine = f"arms.{arm}."
        assigned = [(k.removeprefix(mine), v, loc) for k, v, loc in assignment
                    if not k.startswith("arms.") or k.startswith(mine)]
        for key, value, _ in assigned:
            assign(spec, key, value, accepts)
        sources = [_Source((view.loc + ("arms", arm)), prof.arms.get(arm, {}) if prof else {}),
                   _Source(("arms", arm), suite.arms.get(arm, {})),
                   _Source(view.loc + ("base",), prof.base if prof else {}),
                   _Source(("base",), suite.base)]

        def fail(path: Loc, message: str, _a=assigned, _s=sources) -> SuiteError:
            return loaded.fail(_origin(path, [(k, loc) for k, _, loc in _a], _s), message)

        arms[arm], used, specs[arm] = _resolve_arm(registry, spec, fail)
        versions.update(used)
    names = list(arms)
    for arm in names[1:]:
        for key in SHARED_ACROSS_ARMS:
            if arms[arm][key] != arms[names[0]][key]:
                raise loaded.fail(("arms", arm, key),
                                  f"arms train in lockstep and must share '{key}'")
    return arms, specs, versions


def _expand(loaded: LoadedSuite, registry: Registry, view: _View, overrides: dict[str, Any],
            limit: int, accepts: Accepts) -> list[Cell]:
    """The cells of one profile: axes checked and counted, then each grid point resolved
    once and repeated for every trial seed."""
    suite, prof = loaded.suite, view.prof
    axes = _axes(loaded, view, overrides)
    own_seeds = prof is not None and prof.seeds is not None
    seeds = prof.seeds if own_seeds else suite.seeds
    _check_count(loaded, view, axes, seeds if isinstance(seeds, int) else len(seeds),
                 view.loc + ("seeds",) if own_seeds else ("seeds",), limit)
    use_prof_exclude = prof is not None and prof.exclude is not None
    exclude = prof.exclude if use_prof_exclude else suite.exclude
    cells: list[Cell] = []
    for combo in itertools.product(*axes):
        assignment = [item for group in combo for item in group]
        varied = {key: value for key, value, _ in assignment}
        if any(all(varied.get(k, get_dotted(view.base, k)) == v for k, v in ex.items())
               for ex in exclude):
            continue
        arms, specs, versions = _resolve_cell(loaded, registry, view, assignment, accepts)
        for seed in _seed_list(seeds):
            payload = {"suite": suite.name, "profile": view.name, "trial_seed": seed,
                       "arms": arms, "versions": versions}
            cells.append(Cell(cell_id(payload), suite.name, view.name, seed, arms,
                              {**varied, "trial_seed": seed}, versions, specs))
    if not cells:
        raise loaded.fail(view.loc + ("exclude",) if use_prof_exclude else ("exclude",),
                          f"every cell of profile {view.name!r} is excluded")
    checks.check_claim_metrics(loaded, registry, cells, view.name)
    return cells


def validate_suite(loaded: LoadedSuite, registry: Registry,
                   cell_limit: int = CELL_LIMIT) -> dict[str, list[Cell]]:
    """Check the whole suite before any cell runs and return every profile's cells.

    Checked: the claims, exclude and leaderboard keys, the executor and the loggers; the
    base and each arm as written (merged over the base), so a value that every cell
    overrides is still checked (a base that leaves components to its profiles is checked
    merged into each); each profile's base and arms as written; and the full expansion of
    every profile (at most ``cell_limit`` cells each, counted before any is built).
    """
    suite = loaded.suite
    checks.check_claims(loaded)
    checks.check_structure(loaded)
    checks.check_components(loaded, registry)
    accepts = _accepts(registry)
    required = [k for k, field in RunSpec.model_fields.items() if field.is_required()]
    if all(key in suite.base for key in required):  # else the profiles complete it
        view = _view(loaded, "smoke", None, accepts)
        _resolve_cell(loaded, registry, view, _left_to_grid(view, _axes(loaded, view, {})),
                      accepts)
    cells = {}
    for name in dict.fromkeys(["smoke", *suite.profiles]):
        view = _view(loaded, name, suite.profiles.get(name), accepts)
        if view.prof is not None:
            _resolve_cell(loaded, registry, view, _left_to_grid(view, _axes(loaded, view, {})),
                          accepts)
        cells[name] = _expand(loaded, registry, view, {}, cell_limit, accepts)
    checks.check_board_metrics(loaded, registry, cells)
    return cells


def expand(loaded: LoadedSuite, registry: Registry, profile: str = "smoke",
           overrides: dict[str, Any] | None = None, cell_limit: int = CELL_LIMIT) -> list[Cell]:
    """All cells of the suite under ``profile``, validated and resolved; the whole suite
    (every profile) is validated first (``validate_suite``).

    ``overrides`` (dotted key -> value, the command line's ``--set``) apply to every cell
    after the grid, as single-valued axes.
    """
    suite = loaded.suite
    if profile not in suite.profiles and profile != "smoke":
        names = list(suite.profiles)
        raise loaded.fail(("profiles",), f"no profile {profile!r}{did_you_mean(profile, names)}; "
                                         f"profiles: {', '.join(names) or 'none'}")
    cells = validate_suite(loaded, registry, cell_limit)
    if not overrides:
        return cells[profile]
    accepts = _accepts(registry)
    view = _view(loaded, profile, suite.profiles.get(profile), accepts)
    return _expand(loaded, registry, view, overrides, cell_limit, accepts)
