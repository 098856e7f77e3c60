"""The options that select a study on the command line — a suite's path, ``--profile``,
``--set``, ``--only``, ``--cell-limit`` and ``--store`` — and the ``Study`` they open.
Every command that reads a suite, and every plugin's figure command, takes them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from geobench.contract.manager import registry as loaded_registry
from geobench.contract.manager import warn
from geobench.records import DEFAULT_STORE
from geobench.study.pipeline import Study
from geobench.suite import CELL_LIMIT, LoadedSuite, load_suite
from geobench.suite.stand_ins import StoredConfig, StoredRegistry, with_absent, with_stand_ins
from geobench.suite.yamlio import SuiteError, parse_yaml


def suite_options(p: argparse.ArgumentParser, store: bool = True) -> None:
    """SUITE, ``--profile``, ``--set``, ``--only``, ``--cell-limit`` and, with ``store``,
    ``--store``."""
    p.add_argument("suite", help="path of the suite YAML file")
    p.add_argument("--profile", default="smoke", help="profile to expand (default: smoke)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a run-spec key in every cell (YAML value), e.g. "
                        "--set train.steps=200; repeatable")
    p.add_argument("--only", action="append", default=[], metavar="KEY=VALUE",
                   help="keep the cells whose grid or zip key KEY takes VALUE (YAML), e.g. "
                        "--only optimizer.lr=0.1; repeat to keep several values; the cells "
                        "keep their ids")
    p.add_argument("--cell-limit", type=int, default=None, metavar="N",
                   help="refuse a profile of more than N cells (default: 10000)")
    if store:
        p.add_argument("--store", default=DEFAULT_STORE, help=f"results store ({DEFAULT_STORE})")


def open_study(args: argparse.Namespace, loaded: LoadedSuite | None = None,
               stored: Callable[[], list[StoredConfig]] | None = None,
               runs: bool = False) -> Study:
    """The study ``suite_options`` select: the suite (``loaded``, when the command read it
    already) validated once, seen through ``--profile`` under ``--set``, ``--only`` and
    ``--cell-limit``. ``stored``: the store's cells. A command that only reads them reads
    components of plugins that are not loaded from them (``suite.stand_ins``), with one
    warning naming those plugins; one that ``runs`` cells refuses such a component, naming
    the plugin the store says provided it."""
    loaded = loaded or load_suite(args.suite)  # the options read, and refused, in this order
    registry, changes, limit = loaded_registry(), overrides("--set", args.set), cell_limit(args)
    if stored is not None:
        registry = (with_absent if runs else with_stand_ins)(registry, stored())
    study = Study(loaded, registry, args.profile, changes, pairs("--only", args.only), limit)
    if isinstance(registry, StoredRegistry) and registry.used:
        warn(not_loaded(registry))
    return study


def not_loaded(registry: StoredRegistry) -> str:
    """One line: the plugins whose components are read as the stored cells recorded them,
    each with why it is not loaded where the plugin manager knows (it failed to load, or
    was skipped)."""
    plugins = []
    for origin, version in sorted(registry.missing().items()):
        why = registry.unloaded.get(origin.split(" (")[0], "").partition(") ")[2]
        plugins.append(f"{origin} {version} " + (why or "is not loaded"))
    used = ", ".join(f"{kind[:-1]} {name}" for kind, name in sorted(registry.used))
    return (f"plugin {'; '.join(plugins) or '?'}; read as the stored cells recorded them: "
            f"{used} (run and validate need the plugin)")


def cell_limit(args: argparse.Namespace) -> int:
    """``--cell-limit`` (at least 1), else the default limit."""
    if args.cell_limit is None:
        return CELL_LIMIT
    if args.cell_limit < 1:
        raise SuiteError(f"--cell-limit {args.cell_limit}: the limit is a count >= 1")
    return args.cell_limit


def overrides(flag: str, given: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options: key -> the last YAML value given for it."""
    return {key: values[-1] for key, values in pairs(flag, given).items()}


def pairs(flag: str, given: list[str]) -> dict[str, list[Any]]:
    """``KEY=VALUE`` options: key -> the YAML values given for it, in order."""
    out: dict[str, list[Any]] = {}
    for pair in given:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SuiteError(f"{flag} {pair}: expected KEY=VALUE, e.g. optimizer.lr=0.1")
        out.setdefault(key, []).append(parse_yaml(value, f"{flag} {key}")[0])
    return out
