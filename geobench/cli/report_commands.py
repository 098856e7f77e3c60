"""Commands that read the store: ``results`` (each cell's stored values), ``leaderboard``
(the published page) and ``claims`` (verdicts, their units, two profiles side by side)."""

from __future__ import annotations

import argparse
import json
import sys

from tabulate import tabulate

from geobench.cli.command import Command
from geobench.cli.options import OUT_HELP
from geobench.study.arguments import open_study, suite_options


def _results_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="JSON lines, one object per cell")
    form.add_argument("--csv", action="store_true",
                      help="CSV: one row per cell and final value, config flattened")
    p.add_argument("--series", action="store_true",
                   help="with --csv: one row per stored value of every series (its step "
                        "before the value), as published beside a leaderboard")


def results(args: argparse.Namespace) -> int:
    from geobench.report.results import cell_records, cells_rows, write_csv

    if args.series and not args.csv:
        print("geobench results: --series goes with --csv (every series point as CSV)",
              file=sys.stderr)
        return 2
    cells = open_study(args).cells
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


def _status_text(record: dict) -> str:
    """A cell's status, with the arms that diverged in a complete cell and their steps."""
    diverged = [f"{name} at step {arm['step']}" for name, arm in record["arms"].items()
                if arm["status"] == "diverged"]
    if record["status"] == "complete" and diverged:
        return f"complete (diverged: {', '.join(diverged)})"
    return record["status"]


def _leaderboard_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    p.add_argument("--out", metavar="FOLDER", help=OUT_HELP)


def leaderboard(args: argparse.Namespace) -> int:
    from geobench.report.leaderboard import publish

    print(f"wrote {publish(open_study(args), args.store, args.out)}")
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
    p.add_argument("--seeds", choices=("confirm", "explore"),
                   help="the trial seeds that decide the verdicts (default: the confirmation "
                        "seeds where the profile declares them, else the exploration seeds)")
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
    from geobench.run.store import Store

    refused = _refused(args)
    if refused:
        print(f"geobench claims: {refused}", file=sys.stderr)
        return 2
    study = open_study(args)
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
        print(terminal_table(verdicts, family), end="")
    return 0


COMMANDS = [
    Command("results", "stored results of a suite's cells", _results_arguments, results),
    Command("leaderboard", "publish a suite's leaderboard from the store",
            _leaderboard_arguments, leaderboard),
    Command("claims", "the suite's claims with effect, 95%% CI and verdict", _claims_arguments,
            claims),
]
