"""Commands that look without storing: ``list`` (registered components), ``show`` (a
profile's cells and cost), ``validate``, ``preflight`` (every design point for a few
steps) and ``plugins`` (what is loaded)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tabulate import tabulate

from geobench.cli import options
from geobench.cli.command import Command
from geobench.cli.listing import kind_lines, width
from geobench.contract.errors import RegistryError, did_you_mean
from geobench.contract.hooks import KINDS
from geobench.records import Status
from geobench.study import Study
from geobench.study.arguments import open_study, overrides, suite_options
from geobench.suite.seeds import seed_plan
from geobench.suite.yamlio import SuiteError


def _list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", nargs="?", help=f"one of: {', '.join(KINDS)}")
    p.add_argument("--json", action="store_true")


def list_components(args: argparse.Namespace) -> int:
    from geobench.contract.manager import registry

    reg = registry()
    if args.kind and args.kind not in KINDS:
        raise RegistryError(f"unknown kind {args.kind!r}{did_you_mean(args.kind, list(KINDS))}; "
                            f"kinds: {', '.join(KINDS)}")
    kinds = [args.kind] if args.kind else list(KINDS)
    entries = [reg.get(k, n) for k in kinds for n in reg.names(k)]
    if args.json:
        for e in entries:
            print(json.dumps({"kind": e.kind, "name": e.name, "doc": e.doc, "origin": e.origin,
                              "version": e.version, "params": e.param_rows(),
                              "fields": {k: vars(d) for k, d in e.fields.items()}}))
        return 0
    cols = width()
    for kind in kinds:
        print("\n".join(kind_lines(kind, (e for e in entries if e.kind == kind), cols)))
    return 0


def _suite_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p, store=False)


def show(args: argparse.Namespace) -> int:
    from geobench.run.estimate import cost_lines

    study = open_study(args)
    loaded, cells = study.loaded, study.seed_cells("all")
    replicate = study.seed_cells("replicate") if study.has_replication else []
    varied = list(dict.fromkeys(k for c in cells for k in c.varied))
    also = f" (and {len(replicate)} on the replication seeds: --seeds replicate)" \
        if replicate else ""
    print(f"{loaded.suite.name} [{args.profile}]: {len(cells)} cells{also}, arms: "
          f"{', '.join(cells[0].arms) if cells else '-'}")
    rows = [[c.id] + [c.varied.get(k, "") for k in varied] for c in cells]
    print(tabulate(rows, headers=["cell"] + varied, tablefmt="github"))
    print("\n".join(cost_lines(cells)))
    return 0


def _validate_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p, store=False)
    p.add_argument("--store", help="a store with the exploration cells: also print how many "
                                   "trial seeds each claim needs for its verdict to replicate "
                                   "(docs/claims.md, \"Replication\")")


def validate(args: argparse.Namespace) -> int:
    study = open_study(args)
    study.check_paper_power()
    print(f"{args.suite}: valid ({len(study.cells)} cells in profile {args.profile!r})")
    if args.store is not None:
        print(replication_plan(study, args.store))
    return 0


def replication_plan(study: Study, path: str) -> str:
    """How many trial seeds each claim needs for its verdict to replicate, planned from
    its exploration effect in the store at ``path`` (``claims.replication``)."""
    from geobench.claims.replication import plan_table
    from geobench.run.store import Store

    if not Path(path).is_file():
        raise SuiteError(f"{path}: no store there (--store)")
    seeds = len(seed_plan(study.loaded, study.profile).seeds(study.deciding_seeds()))
    store = Store(path, read_only=True)
    try:
        verdicts = study.verdicts(store, "explore")
    finally:
        store.close()
    return (f"\nreplication plan from the exploration seeds in {path}: the chance that two "
            f"sets of {seeds} seeds (the deciding set's size) both decide the verdict the "
            "exploration effect points to, and the seeds a set needs for that chance to "
            "reach 0.8 (docs/claims.md, \"Replication\")\n" + plan_table(verdicts, seeds))


def _preflight_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p, store=False)
    p.add_argument("--steps", type=options.count, default=2, help="steps per design point (2)")
    p.add_argument("--batch", type=options.count, help="cap data.batch_size at this")
    p.add_argument("--samples", type=options.count, help="cap data.n_train and data.n_test at "
                                                         "this")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="replace train.device")
    p.add_argument("--data", action="append", default=[], metavar="KEY=VALUE",
                   help="dataset param set where the dataset takes it, e.g. "
                        "verify_md5=false; repeatable")
    p.add_argument("--metric", action="append", default=[], metavar="KEY=VALUE",
                   help="metric param set where a metric takes it, e.g. max_iter=8; "
                        "repeatable")


def preflight(args: argparse.Namespace) -> int:
    from geobench.run.preflight import HEADERS, Shortening, design_points
    from geobench.run.preflight import preflight as run_points

    study = open_study(args)
    cells = study.seed_cells("all")  # the replication seeds' design points are the same
    data = overrides("--data", args.data)
    metrics = overrides("--metric", args.metric)
    how = Shortening(args.steps, args.batch, args.samples, args.device, data, metrics)
    print(f"{args.suite} [{args.profile}]: {len(design_points(cells))} design points of "
          f"{len(cells)} cells, {args.steps} steps each", flush=True)
    runs = run_points(cells, study.registry, how, lambda run: print(
        f"  {run.result.status.value}: {run.label()}", flush=True))
    print(tabulate([run.row() for run in runs], headers=HEADERS, tablefmt="github"))
    failed = [run for run in runs
              if run.result.status != Status.COMPLETE or run.result.metric_failures]
    for run in failed:
        for problem in [run.result.error] if run.result.error else run.result.metric_failures:
            print(f"{run.label()}: {problem}", file=sys.stderr)
    return 1 if failed else 0


def _plugins_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="JSON lines, one object per plugin")


def plugins(args: argparse.Namespace) -> int:
    from geobench.contract.manager import plugins as loaded
    from geobench.contract.manager import registry

    registry()  # a plugin whose components fail to register is dropped (with a warning)
    for info in loaded().info.values():
        if args.json:
            print(json.dumps({"name": info.name, "dist": info.dist, "version": info.version,
                              "hooks": list(info.hooks)}))
        else:
            print(f"{info.name:<12} {info.dist} {info.version}: {', '.join(info.hooks)}")
    return 0


COMMANDS = [
    Command("list", "registered components with params and origin", _list_arguments,
            list_components),
    Command("show", "the expanded cells of a suite", _suite_arguments, show),
    Command("preflight", "run every design point of a profile for a few steps (nothing is "
                         "stored)", _preflight_arguments, preflight),
    Command("validate", "check a suite without running it", _validate_arguments, validate),
    Command("plugins", "loaded plugins: distribution, version, hooks", _plugins_arguments,
            plugins),
]
