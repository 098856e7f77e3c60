"""Commands that read the store: ``results`` (each cell's stored values), ``leaderboard``
(the published page) and ``claims`` (verdicts, their units, two profiles side by side)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from tabulate import tabulate

from geobench.cli.command import Command
from geobench.cli.options import OUT_HELP
from geobench.study.arguments import open_study, suite_options
from geobench.study.pipeline import Study


def _stored_study(args: argparse.Namespace) -> Study:
    """The study of a command that only reads the store: components whose plugin is not
    loaded are read from the stored cells."""
    from geobench.run.store import stored_configs

    return open_study(args, stored=lambda: stored_configs(args.store))


def _results_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="JSON lines, one object per cell")
    form.add_argument("--csv", action="store_true",
                      help="CSV: one row per cell and final value, config flattened")
    form.add_argument("--failed", action="store_true",
                      help="each failed cell and each metric that failed on an arm: its id, "
                           "varied keys, error and stored traceback")
    p.add_argument("--series", action="store_true",
                   help="with --csv: one row per stored value of every series (its step "
                        "before the value), as published beside a leaderboard")


def results(args: argparse.Namespace) -> int:
    from geobench.report.results import cell_records, cells_rows, failure_records, write_csv

    if args.series and not args.csv:
        print("geobench results: --series goes with --csv (every series point as CSV)",
              file=sys.stderr)
        return 2
    cells = _stored_study(args).cells
    if args.failed:
        print(_failures_text(failure_records(args.store, cells), len(cells)), end="")
        return 0
    if args.csv:  # read only: a store that is not there is an error, not a new file
        write_csv(cells_rows(args.store, cells, args.series), sys.stdout)
        return 0
    records = cell_records(args.store, cells)
    if args.json:
        for record in records:
            print(json.dumps(record))
        return 0
    rows = [[r["cell"], _status_text(r), c.label()] for r, c in zip(records, cells)]
    print(tabulate(rows, headers=["cell", "status", "varied"], tablefmt="github"))
    return 0


def _failures_text(records: list[dict], cells: int) -> str:
    """Each failure: a line naming the cell (and the arm and metric), its varied keys, the
    error, then the traceback indented."""
    if not records:
        return f"no failed cell or metric among the {cells} cells of the selection\n"
    blocks = []
    for r in records:
        what = ("failed" if r["metric"] is None
                else f"metric {r['metric']} failed on arm {r['arm']} at step {r['step']}")
        trace = (r["traceback"] or "(none stored)").rstrip("\n")
        blocks.append(f"cell {r['cell']}: {what}\n  varied: {r['varied']}\n"
                      f"  error: {r['error']}\n  traceback:\n"
                      + textwrap.indent(trace, "    ") + "\n")
    return "\n".join(blocks)


def _status_text(record: dict) -> str:
    """A cell's status, with the arms that diverged in a complete cell and their steps, and
    the metrics that failed on an arm."""
    diverged = [f"{name} at step {arm['step']}" for name, arm in record["arms"].items()
                if arm["status"] == "diverged"]
    failed = [f"{f['metric']} on {f['arm']}" for f in record["failed_metrics"]]
    notes = ([f"diverged: {', '.join(diverged)}"] if diverged else []) + (
        [f"metric failed: {', '.join(failed)}"] if failed else [])
    if record["status"] == "complete" and notes:
        return f"complete ({'; '.join(notes)})"
    return record["status"]


def _leaderboard_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    p.add_argument("--out", metavar="FOLDER", help=OUT_HELP)
    p.add_argument("--force", action="store_true",
                   help="overwrite the page even where another store published it")


def leaderboard(args: argparse.Namespace) -> int:
    from geobench.report.leaderboard import publish

    print(f"wrote {publish(_stored_study(args), args.store, args.out, args.force)}")
    return 0


def _claims_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    p.add_argument("--json", action="store_true", help="JSON lines, one object per claim")
    p.add_argument("--units", action="store_true",
                   help="every unit of every claim and part: the values that entered its "
                        "interval, or why it was left out")
    p.add_argument("--csv", action="store_true", help="with --units: as CSV")
    p.add_argument("--wide", action="store_true",
                   help="the leaderboard page's table, with each claim's statement (markdown)")
    p.add_argument("--seeds", choices=("confirm", "explore", "replicate"),
                   help="the trial seeds that decide the verdicts (default: the confirmation "
                        "seeds where the profile declares them, else the exploration seeds; "
                        "replicate: the replication seeds)")
    p.add_argument("--beside", metavar="PROFILE",
                   help="a table of each claim's effect and verdict in PROFILE beside "
                        "--profile's, marking the claims whose verdict changes")


def _refused(args: argparse.Namespace) -> str:
    """Why these ``claims`` options cannot go together (empty when they can)."""
    if args.csv and not args.units:
        return "--csv goes with --units (the unit rows as CSV)"
    if args.beside and (args.units or args.json or args.wide):
        return "--beside prints one table; leave out --units, --json and --wide"
    if args.wide and (args.units or args.json):
        return "--wide is a form of the claims table; leave out --units and --json"
    if args.beside == args.profile:
        return f"--beside {args.beside} is the profile shown; name another profile"
    return ""


def claims(args: argparse.Namespace) -> int:
    from geobench.claims.claims_table import (
        UNIT_COLUMNS,
        beside_table,
        claims_table,
        unit_rows,
        units_csv,
    )
    from geobench.claims.terminal import terminal_table
    from geobench.report.retired import retired_text
    from geobench.run.store import Store

    refused = _refused(args)
    if refused:
        print(f"geobench claims: {refused}", file=sys.stderr)
        return 2
    study = _stored_study(args)
    if not study.loaded.suite.claims:
        print(f"{args.suite}: the suite declares no claims", file=sys.stderr)
        return 0
    study.decided_cells(args.seeds)  # a seed set the profile lacks: refused before reading
    beside_study = study.at(args.beside) if args.beside else None
    if beside_study is not None:
        beside_study.decided_cells(args.seeds)
    store = Store(args.store, read_only=True)
    try:
        family = None
        if args.seeds is None and beside_study is None:  # the verdicts a page publishes
            verdicts, family = study.published_verdicts(store)
        else:
            verdicts = study.verdicts(store, args.seeds)
        beside = beside_study.verdicts(store, args.seeds) if beside_study else []
    finally:
        store.close()
    if args.beside:
        print(beside_table({args.beside: beside, args.profile: verdicts}), end="")
    elif args.units and args.csv:
        print(units_csv(verdicts), end="")
    elif args.units:
        print(tabulate(unit_rows(verdicts), headers=UNIT_COLUMNS))
    elif args.json:
        for v in verdicts:
            print(json.dumps(v.as_json()))
    elif args.wide:
        print(claims_table(verdicts, family=family), end="")
    else:
        print(terminal_table(verdicts, family) + retired_text(study.loaded.suite), end="")
    return 0


COMMANDS = [
    Command("results", "stored results of a suite's cells", _results_arguments, results),
    Command("leaderboard", "publish a suite's leaderboard from the store",
            _leaderboard_arguments, leaderboard),
    Command("claims", "the suite's claims with effect, 95%% CI and verdict", _claims_arguments,
            claims),
]
