"""Checks of a suite beyond its schema: keys that name run-spec fields, arms and metrics,
exclude entries, leaderboard keys, the executor and loggers, finite numbers and dataset
sizes (the claims' are ``geobench.claims.validate``, with the helpers here).
Each raises the suite's one-line ``SuiteError`` through ``loaded.fail``."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ValidationError

from geobench.contract.errors import did_you_mean
from geobench.contract.registry import Registry, RegistryError
from geobench.contract.spec import RunSpec
from geobench.records import SINGLE_ARM, TRAIN_LOSS_KEY, Cell, parse_metric_key
from geobench.suite.load import LoadedSuite, Loc, validation_errors
from geobench.suite.merge import get_dotted
from geobench.suite.problems import Problems
from geobench.suite.where import EXTRA_KEYS, config_value


def check_key(loaded: LoadedSuite, loc: Loc, key: str, arms: dict[str, Any],
               extra: tuple[str, ...] = ()) -> None:
    """``key`` is a dotted run-spec key (or ``arms.<arm>.<key>``, or one of ``extra``)."""
    if key in extra:
        return
    head, _, rest = key.partition(".")
    fields = list(RunSpec.model_fields)
    if head == "arms":
        arm, _, inner = rest.partition(".")
        if arm not in arms:
            raise loaded.fail(loc, f"unknown arm {arm!r}; arms: {', '.join(arms) or 'none'}")
        if not inner:
            raise loaded.fail(loc, f"{key!r} names a whole arm; name a key inside it, e.g. "
                                   f"arms.{arm}.optimizer.lr")
    elif head not in fields:
        raise loaded.fail(
            loc, f"{key!r} is not a run-spec key{did_you_mean(head, fields)}; "
                 f"keys start with one of: {', '.join(fields)}, arms")


def check_excludes(loaded: LoadedSuite) -> None:
    """Every exclude entry (the suite's and its profiles') names keys, each a run-spec key;
    every problem of them at once."""
    suite, problems = loaded.suite, Problems()
    excludes = [(("exclude",), suite.exclude)]
    excludes += [(("profiles", n, "exclude"), p.exclude) for n, p in suite.profiles.items()]
    for loc, entries in excludes:
        for i, entry in enumerate(entries or []):
            if not entry:
                problems.add(loaded.fail(loc + (i,), "an exclude entry needs at least one key "
                                                     "(an empty one drops every cell)"))
            for key in entry:
                with problems.check():
                    check_key(loaded, loc + (i, key), key, suite.arms)
    problems.raise_found()


def check_structure(loaded: LoadedSuite) -> None:
    """Keys outside the run spec besides the exclude entries: profile arms, leaderboard
    rows, columns, labels, plot ``x`` and tables; every problem of them at once."""
    suite = loaded.suite
    problems = Problems()
    for name, prof in suite.profiles.items():
        for arm in prof.arms:
            if arm not in suite.arms:
                problems.add(loaded.fail(("profiles", name, "arms", arm), f"unknown arm "
                                         f"{arm!r}; arms: {', '.join(suite.arms) or 'none'}"))
    board, extra = suite.leaderboard, EXTRA_KEYS
    keys = [(("leaderboard", "rows", i), key, extra) for i, key in enumerate(board.rows or [])]
    if board.columns is not None:
        keys.append((("leaderboard", "columns"), board.columns, extra))
    keys += [(("leaderboard", "labels", key), key, extra) for key in board.labels]
    keys += [(("leaderboard", "plots", i, "x"), plot.x, ()) for i, plot in
             enumerate(board.plots) if not isinstance(plot, str) and plot.x is not None]
    for loc, key, allowed in keys:
        with problems.check():
            check_key(loaded, loc, key, suite.arms, allowed)
    with problems.check():
        check_tables(loaded)
    problems.raise_found()


def check_tables(loaded: LoadedSuite) -> None:
    """``leaderboard.tables``: at least one, unique titles, not with ``columns``; row and
    ``where`` keys name run-spec keys (or arm, trial_seed), known arms; metrics to show."""
    suite = loaded.suite
    board, extra = suite.leaderboard, EXTRA_KEYS
    if board.tables is None:
        return
    if not board.tables:
        raise loaded.fail(("leaderboard", "tables"), "give at least one table (leave "
                          "'tables' out for the single main table)")
    if board.columns is not None:
        raise loaded.fail(("leaderboard", "columns"), "'columns' pivots the main table, "
                          "which 'tables' replaces; make the key a row key of a table")
    arms = list(suite.arms) or [SINGLE_ARM]
    titles: set[str] = set()
    for i, table in enumerate(board.tables):
        loc = ("leaderboard", "tables", i)
        if table.title in titles:
            raise loaded.fail(loc + ("title",), f"table title {table.title!r} appears "
                                                "twice; titles are unique")
        titles.add(table.title)
        for j, key in enumerate(table.rows or []):
            check_key(loaded, loc + ("rows", j), key, suite.arms, extra)
        for key, value in table.where.items():
            check_key(loaded, loc + ("where", key), key, suite.arms, extra)
            if isinstance(value, list) and not value:
                raise loaded.fail(loc + ("where", key), "a list of values needs at least one")
            named = value if key == "arm" and isinstance(value, list) else \
                [value] if key == "arm" else []
            for arm in named:
                if arm not in arms:
                    raise loaded.fail(loc + ("where", key), f"table {table.title!r} names "
                                      f"arm {arm!r}; arms: {', '.join(arms)}")
        if not (board.metrics if table.metrics is None else table.metrics):
            raise loaded.fail(loc, f"table {table.title!r} has no metrics: give 'metrics' "
                                   "to the table or to the leaderboard")


def check_components(loaded: LoadedSuite, registry: Registry) -> None:
    """The suite's default executor and its loggers are registered, with valid params
    (every problem of them at once)."""
    problems = Problems()
    if loaded.suite.executor is not None:
        with problems.check():
            _check_component(loaded, registry, ("executor",), "executors",
                             loaded.suite.executor)
    seen: set[str] = set()
    for i, spec in enumerate(loaded.suite.loggers):
        with problems.check():
            _check_component(loaded, registry, ("loggers", i), "loggers", spec)
            if spec["name"] in seen:
                raise loaded.fail(("loggers", i, "name"), f"logger {spec['name']!r} is listed "
                                                          "twice; list each logger once")
            seen.add(spec["name"])
    problems.raise_found()


def _check_component(loaded: LoadedSuite, registry: Registry, loc: Loc, kind: str,
                     spec: Any) -> None:
    what = "an executor" if kind == "executors" else "a logger"
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise loaded.fail(loc, f"{what} is a mapping with 'name' (one of: "
                               f"{', '.join(registry.names(kind))})")
    params = {k: v for k, v in spec.items() if k != "name"}
    try:
        entry = registry.get(kind, spec["name"])
        entry.params.model_validate(params)
    except RegistryError as exc:
        raise loaded.fail(loc + ("name",), str(exc)) from None
    except ValidationError as exc:
        raise validation_errors(exc, params, lambda at, message: loaded.fail(loc + at, message),
                                entry.params) from None


def measured(cells: list[Cell]) -> dict[str, str]:
    """Metric id -> metric name of what any of the cells measures (design points may measure
    different metrics)."""
    specs: dict[str, str] = {}
    for c in cells:
        for a in c.arms.values():
            for m in a["metrics"]:
                specs.setdefault(m["id"], m["name"])
    return specs


def check_result_key(loaded: LoadedSuite, registry: Registry, loc: Loc, key: str,
                      specs: dict[str, str], scope: str, what: str) -> None:
    """``key`` names a metric measured in ``specs`` and a field that metric declares."""
    parsed = parse_metric_key(key)
    mid, fld = parsed.metric, parsed.field
    if parsed.series == TRAIN_LOSS_KEY:
        return
    if mid not in specs:
        raise loaded.fail(loc, f"{what}: no metric with id {mid!r} in {scope}"
                               f"{did_you_mean(mid, list(specs))}; ids: "
                               f"{', '.join(specs) or 'none'} (and loss.train)")
    entry = registry.get("metrics", specs[mid])
    if entry.fields and entry.field_doc(fld) is None:
        raise loaded.fail(loc, f"{what}: metric {specs[mid]!r} has no field "
                               f"{fld!r}{did_you_mean(fld, list(entry.fields))}; fields: "
                               f"{', '.join(entry.fields)}")


def check_board_metrics(loaded: LoadedSuite, registry: Registry,
                         cells: dict[str, list[Cell]]) -> None:
    """Every leaderboard metric, table metric and plot is measured in some profile (a
    profile that does not measure one shows it empty); a plot's ``x`` holds a number in
    every cell."""
    specs = {k: v for profile in cells.values() for k, v in measured(profile).items()}
    board = loaded.suite.leaderboard
    keys = [(("leaderboard", "metrics", i, "key"), m.key) for i, m in enumerate(board.metrics)]
    keys += [(("leaderboard", "plots", i), p if isinstance(p, str) else p.key)
             for i, p in enumerate(board.plots)]
    keys += [(("leaderboard", "tables", i, "metrics", j, "key"), m.key)
             for i, t in enumerate(board.tables or []) for j, m in enumerate(t.metrics or [])]
    for loc, key in keys:
        check_result_key(loaded, registry, loc, key, specs, "any profile", "leaderboard")
    every = [c for profile in cells.values() for c in profile]
    for i, plot in enumerate(board.plots):
        if isinstance(plot, str) or plot.x is None:
            continue
        for c in every:
            for arm, spec in c.arms.items():
                value = get_dotted(spec, plot.x)
                value = config_value(c, plot.x) if value is None else value
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise loaded.fail(("leaderboard", "plots", i, "x"), f"{plot.x!r} is "
                                      f"{value!r} in arm {arm!r} of a {c.profile!r} cell; x "
                                      "multiplies the step: a config key holding a number")


def non_finite(value: Any, path: Loc = ()) -> Loc | None:
    """Path of the first NaN or infinite float inside ``value`` (dicts and lists searched)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list | tuple) else []
    for key, item in items:
        found = non_finite(item, path + (key,))
        if found is not None:
            return found
    return None


def check_data(params: BaseModel, fail: Any) -> None:
    """Cheap size checks of a dataset from its params alone, without building it (which may
    mean reading CIFAR from disk): the batch fits in ``n_train`` when that is set, and a class
    subset lies within ``num_classes`` when the dataset declares it."""
    n_train, batch = getattr(params, "n_train", None), getattr(params, "batch_size", None)
    if isinstance(n_train, int) and isinstance(batch, int) and batch > n_train:
        raise fail(("data", "batch_size"), f"batch_size {batch} exceeds n_train {n_train}; "
                                           "a batch is at most the training set")
    classes, total = getattr(params, "classes", None), getattr(params, "num_classes", None)
    if not isinstance(total, int) or classes is None:
        return
    if isinstance(classes, int) and not 1 <= classes <= total:
        raise fail(("data", "classes"), f"classes {classes} is not between 1 and "
                                        f"num_classes ({total})")
    if isinstance(classes, list) and not all(0 <= c < total for c in classes):
        raise fail(("data", "classes"), f"class ids {classes} are not all in 0..{total - 1}")
