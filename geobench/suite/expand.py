"""Suite -> every profile validated -> expanded, fully resolved ``Cell``s (grid x zip x
seeds, exclusions, the cell limit, cell ids)."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from typing import Any

from geobench.contract.errors import did_you_mean
from geobench.contract.registry import Registry
from geobench.contract.spec import RunSpec
from geobench.records import Cell
from geobench.suite import checks, filters
from geobench.suite.load import LoadedSuite, Loc, format_loc
from geobench.suite.merge import Accepts, View, accepts_of, deep_merge, get_dotted, profile_view
from geobench.suite.problems import Problems
from geobench.suite.resolve import Assignment, resolve_cell
from geobench.suite.seeds import check_disjoint, seed_plan
from geobench.suite.stand_ins import StoredRegistry

CELL_LIMIT = 10_000
"""Most cells one profile may expand to, unless raised (``--cell-limit``)."""


def cell_id(payload: dict[str, Any]) -> str:
    """Stable id: sha256 of the canonical JSON (sorted keys, no whitespace), 16 hex digits."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


Axis = list[Assignment]


def _axes(loaded: LoadedSuite, view: View, overrides: dict[str, Any]) -> list[Axis]:
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
    problems = Problems()
    for loc, key, values in grid:
        with problems.check():  # each axis's problems, whatever the others'
            checks.check_key(loaded, loc, key, suite.arms)
            if not values:
                raise loaded.fail(loc, "a grid axis needs at least one value")
            axes.append([[(key, v, loc + (i,))] for i, v in enumerate(values)])
            _check_once(loaded, varied, key, loc)
    for g, group in enumerate(zips):
        with problems.check():
            lengths = {len(v) for v in group.values()}
            if not group or 0 in lengths:
                raise loaded.fail(zloc + (g,), "a zip group needs at least one key, each "
                                               "with at least one value")
            if len(lengths) != 1:
                raise loaded.fail(zloc + (g,), "zipped lists must have equal lengths (got "
                                  f"{', '.join(str(len(v)) for v in group.values())})")
            for key in group:
                checks.check_key(loaded, zloc + (g, key), key, suite.arms)
                _check_once(loaded, varied, key, zloc + (g, key))
            n = lengths.pop()
            axes.append([[(k, vals[i], zloc + (g, k, i)) for k, vals in group.items()]
                         for i in range(n)])
    problems.raise_found()
    for key, value in overrides.items():
        checks.check_key(loaded, ("--set", key), key, suite.arms)
        for other, where in varied.items():
            if _overlap(key, other):
                raise loaded.fail(("--set", key), f"{key!r} is varied by {format_loc(where)} "
                                  f"in profile {view.name!r}; --set gives every cell one "
                                  "value, so it cannot set a varied key: keep some of its "
                                  "values with --only KEY=VALUE, or edit the axis")
        axes.append([[(key, value, ("--set", key))]])
    return axes


def _restrict(loaded: LoadedSuite, view: View, axes: list[Axis],
              only: dict[str, list[Any]]) -> list[Axis]:
    """``--only KEY=VALUE``: the axis that varies KEY keeps the points where KEY takes one
    of the values given; the other axes, and the ids of the cells kept, are unchanged."""
    declared = [[(k, v) for k, v, loc in axis[0] if loc[0] != "--set"] for axis in axes]
    varied = [k for keys in declared for k, _ in keys]
    out = list(axes)
    for key, wanted in only.items():
        i = next((i for i, keys in enumerate(declared) if key in dict(keys)), None)
        if i is None:
            raise loaded.fail(("--only", key), f"{key!r} is not varied in profile "
                              f"{view.name!r}; --only keeps some values of a grid or zip key "
                              f"(varied: {', '.join(varied) or 'none'})")
        taken = [next(v for k, v, _ in point if k == key) for point in out[i]]
        for value in wanted:
            if not any(filters.same(value, t) for t in taken):
                once = [t for j, t in enumerate(taken)
                        if not any(filters.same(t, u) for u in taken[:j])]
                raise loaded.fail(("--only", key), f"{filters.show(value)} is not a value of "
                                  f"{key!r} in profile {view.name!r}; it takes: "
                                  f"{filters.listing(once)}")
        out[i] = [p for p, t in zip(out[i], taken) if any(filters.same(t, w) for w in wanted)]
    return out


def _overlap(a: str, b: str) -> bool:
    """Keys ``a`` and ``b`` set the same value, or one sets a part of the other's
    (``optimizer`` and ``optimizer.lr``; ``arms.gd.optimizer.lr`` and ``optimizer.lr``)."""
    (arm_a, key_a), (arm_b, key_b) = _arm_key(a), _arm_key(b)
    if arm_a and arm_b and arm_a != arm_b:
        return False
    return key_a == key_b or key_a.startswith(key_b + ".") or key_b.startswith(key_a + ".")


def _arm_key(key: str) -> tuple[str | None, str]:
    """``arms.<arm>.<rest>`` -> (arm, rest); a plain key -> (None, key)."""
    head, _, rest = key.partition(".")
    arm, _, inner = rest.partition(".")
    return (arm, inner) if head == "arms" and inner else (None, key)


def _left_to_grid(view: View, axes: list[Axis]) -> Assignment:
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


def _check_as_written(loaded: LoadedSuite, registry: Registry, view: View,
                      accepts: Accepts) -> None:
    """The base and each arm of ``view`` as written (grid keys they leave unset at their
    first value): each arm over the base, then the base over each arm."""
    left = _left_to_grid(view, _axes(loaded, view, {}))
    for base_first in (False, True):
        resolve_cell(loaded, registry, view, left, accepts, base_first)


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


def _check_count(loaded: LoadedSuite, view: View, axes: list[Axis], seeds: int,
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


def _check_distinct(loaded: LoadedSuite, points: dict[str, Assignment], point: str,
                    assignment: Assignment) -> None:
    """No two grid points resolve to the same cells: a value repeated in an axis (``[relu,
    relu]``, ``[1, 1.0]`` for a number) or an axis every arm overrides would run one design
    twice under two labels."""
    if point not in points:
        points[point] = assignment
        return
    other = points[point]
    loc = next(loc for (_, _, loc), (_, _, seen) in zip(assignment, other) if loc != seen)
    first = ", ".join(f"{k}={v!r}" for k, v, _ in other)
    raise loaded.fail(loc, f"this grid point resolves to the same cells as {first} (a "
                           "repeated value, values equal after validation such as 1 and 1.0, "
                           "or a key every arm overrides); give each axis distinct values")


def _written(varied: dict[str, Any], base: dict[str, Any], key: str) -> Any:
    """``key``'s value as the suite writes it at one grid point: a grid or zip key, inside a
    varied parent (``optimizer: [{name: sgd, lr: 0.1}, ...]``), else the base's."""
    if key in varied:
        return varied[key]
    for parent, value in varied.items():
        if key.startswith(parent + ".") and isinstance(value, dict):
            inner = get_dotted(value, key[len(parent) + 1:])
            if inner is not None:
                return inner
    return get_dotted(base, key)


def _expand(loaded: LoadedSuite, registry: Registry, view: View, overrides: dict[str, Any],
            limit: int, accepts: Accepts,
            uses: dict[Loc, filters.ExcludeUse] | None = None,
            only: dict[str, list[Any]] | None = None) -> list[Cell]:
    """The cells of one profile: axes checked and counted, then each grid point resolved
    once and repeated for every trial seed; ``uses`` collects what each exclude entry met.
    Through stand-ins (``suite.stand_ins``), each cell is the stored one it agrees with."""
    suite, prof = loaded.suite, view.prof
    axes = _restrict(loaded, view, _axes(loaded, view, overrides), only or {})
    plan = seed_plan(loaded, view.name)
    _check_count(loaded, view, axes, plan.count, plan.explore_loc, limit)
    check_disjoint(loaded, view.name, plan)
    use_prof_exclude = prof is not None and prof.exclude is not None
    exclude = prof.exclude if use_prof_exclude else suite.exclude
    exclude_loc = view.loc + ("exclude",) if use_prof_exclude else ("exclude",)
    cells: list[Cell] = []
    points: dict[str, Assignment] = {}
    problems = Problems()
    for combo in itertools.product(*axes):
        assignment = [item for group in combo for item in group]
        varied = {key: value for key, value, _ in assignment}
        declared = {key: value for key, value, loc in assignment if loc[0] != "--set"}
        dropped = False
        for i, entry in enumerate(exclude):
            written = {k: _written(declared, view.base, k) for k in entry}
            hit = written == entry
            dropped |= hit
            if uses is not None:
                uses.setdefault(exclude_loc + (i,), filters.ExcludeUse()).see(
                    view.name, written, hit)
        if dropped:
            continue
        with problems.check():  # each grid point's problems, whatever the others'
            arms, specs, versions = resolve_cell(loaded, registry, view, assignment, accepts)
            _check_distinct(loaded, points, cell_id({"arms": arms, "versions": versions}),
                            assignment)
            for seed in plan.declared():
                payload = {"suite": suite.name, "profile": view.name, "trial_seed": seed,
                           "arms": arms, "versions": versions}
                cells.append(Cell(cell_id(payload), suite.name, view.name, seed, arms,
                                  {**varied, "trial_seed": seed}, versions, specs))
    problems.raise_found()
    if not cells:
        raise loaded.fail(exclude_loc, f"every cell of profile {view.name!r} is excluded")
    return registry.complete(cells, cell_id) if isinstance(registry, StoredRegistry) else cells


def validate_suite(loaded: LoadedSuite, registry: Registry,
                   cell_limit: int = CELL_LIMIT) -> dict[str, list[Cell]]:
    """Check the whole suite before any cell runs and return every profile's cells.

    Checked: the exclude entries and leaderboard keys, the executor and the loggers; the
    base and each arm as written (merged over the base), so a value that every cell
    overrides is still checked (a base that leaves components to its profiles is checked
    merged into each); each profile's base and arms as written; the full expansion of
    every profile (at most ``cell_limit`` cells each, counted before any is built); and
    that every filter can match (``filters``). Independent problems (the structure's keys,
    each component, arm, grid point and profile) are raised together (``Problems``); the
    filters and the leaderboard's metrics only once every profile expanded. The claims are
    checked on these cells by ``geobench.claims.validate``.
    """
    suite = loaded.suite
    problems = Problems()
    with problems.check():
        checks.check_structure(loaded)
    excludes = problems.passes(lambda: checks.check_excludes(loaded))
    with problems.check():
        checks.check_components(loaded, registry)
    accepts = accepts_of(registry)
    required = [k for k, field in RunSpec.model_fields.items() if field.is_required()]
    written = True
    if all(key in suite.base for key in required):  # else the profiles complete it
        written = problems.passes(lambda: _check_as_written(
            loaded, registry, profile_view(loaded, "smoke", None, accepts), accepts))
    cells = {}
    uses: dict[Loc, filters.ExcludeUse] = {("exclude", i): filters.ExcludeUse()
                                           for i in range(len(suite.exclude))}
    for name in dict.fromkeys(["smoke", *suite.profiles]):
        with problems.check():  # each profile's problems, whatever the others'
            view = profile_view(loaded, name, suite.profiles.get(name), accepts)
            if view.prof is not None:
                _check_as_written(loaded, registry, view, accepts)
            if excludes and (written or view.prof is not None):  # else its grid points
                cells[name] = _expand(  # repeat the problems of the base, arms or excludes
                    loaded, registry, view, {}, cell_limit, accepts, uses)
    problems.raise_found()  # the filters and the leaderboard are checked on every profile
    filters.check_filters(loaded, cells, uses)
    checks.check_board_metrics(loaded, registry, cells)
    return cells


def check_profile(loaded: LoadedSuite, profile: str) -> None:
    """``profile`` is ``smoke`` or a profile the suite declares."""
    if profile not in loaded.suite.profiles and profile != "smoke":
        names = list(loaded.suite.profiles)
        raise loaded.fail(("profiles",), f"no profile {profile!r}{did_you_mean(profile, names)}; "
                                         f"profiles: {', '.join(names) or 'none'}")


def profile_cells(loaded: LoadedSuite, registry: Registry, profiles: dict[str, list[Cell]],
                  profile: str, overrides: dict[str, Any] | None = None,
                  cell_limit: int = CELL_LIMIT, only: dict[str, list[Any]] | None = None
                  ) -> list[Cell]:
    """``profile``'s cells of the validated ``profiles``, expanded again under ``overrides``
    and ``only`` when they are given: ``overrides`` (dotted key -> value, the command
    line's ``--set``) apply to every cell after the grid, as single-valued axes; ``only``
    (grid or zip key -> values, ``--only``) keeps the grid points where each key takes one
    of its values."""
    if not overrides and not only:
        return profiles[profile]
    accepts = accepts_of(registry)
    view = profile_view(loaded, profile, loaded.suite.profiles.get(profile), accepts)
    return _expand(loaded, registry, view, overrides or {}, cell_limit, accepts, only=only)
