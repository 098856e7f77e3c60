"""``geobench run`` (a suite's missing cells, then its leaderboard) and ``geobench collect``
(the results that Slurm array tasks have written)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from geobench.cli import options
from geobench.cli.command import Command
from geobench.records import DEFAULT_THREADS, Status
from geobench.run.leases import LEASE_TIMEOUT_S
from geobench.study.arguments import open_study, suite_options
from geobench.suite.seeds import SEED_SETS

RUN_STATUSES = (Status.COMPLETE, Status.DIVERGED, Status.FAILED)
EXECUTOR_FLAGS = [
    ("--workers", int, "pool: worker processes"),
    ("--address", str, "ray: 'auto' or HOST:PORT of a running cluster"),
    ("--num-cpus", float, "ray: CPUs per cell"),
    ("--num-gpus", float, "ray: GPUs per cell"),
    ("--partition", str, "slurm: partition"),
    ("--gpus-per-node", int, "slurm: GPUs per array task"),
    ("--timeout-min", int, "slurm: wall-time limit per array task"),
    ("--array-parallelism", int, "slurm: array tasks running at once"),
]


def _run_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    p.add_argument("--executor", help="registered executor: local, pool, ray, slurm, ... "
                                      "(default: the suite's, else local)")
    for flag, kind, text in EXECUTOR_FLAGS:
        p.add_argument(flag, type=kind, help=text)
    p.add_argument("--threads", type=options.count, default=DEFAULT_THREADS, metavar="N",
                   help="torch threads of each cell, under every executor; a CPU cell's numbers "
                        f"depend on it (default {DEFAULT_THREADS}, as the published leaderboards)")
    p.add_argument("--seeds", choices=SEED_SETS, default="all",
                   help="which trial seeds run: the exploration ('seeds:'), the confirmation "
                        "('confirm:'), both (all, the default) or the replication "
                        "('replicate:'); docs/claims.md")
    rerun = p.add_mutually_exclusive_group()
    rerun.add_argument("--rerun", action="store_true", help="rerun cells already in the store")
    rerun.add_argument("--rerun-diverged", action="store_true",
                       help="rerun the cells stored as diverged (a store written before arms "
                            "diverged one by one ended a cell at its first diverged arm)")
    p.add_argument("--max-cells", type=options.count, help="run at most this many of the "
                                                           "missing cells")
    p.add_argument("--lease-timeout", type=options.seconds, default=LEASE_TIMEOUT_S,
                   metavar="S", help="take over a cell another run leased but has not renewed "
                                     f"for S seconds (default {LEASE_TIMEOUT_S:.0f})")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--logger", action="append", default=[], metavar="NAME",
                   help="experiment tracker fed every series while cells train "
                        "(tensorboard, wandb, ...; beside the suite's loggers:); repeatable")
    p.add_argument("--log-dir", metavar="DIR", help="the loggers' folder (default: logs/ "
                                                    "beside the store)")
    p.add_argument("--no-leaderboard", action="store_true", help="do not publish at the end")
    p.add_argument("--out", metavar="FOLDER", help=options.OUT_HELP)
    p.add_argument("--force", action="store_true",
                   help="overwrite the leaderboard even where another store published it")


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM (a scheduler's time limit, ``kill``): leave as Ctrl-C does, through every
    ``finally`` (leases released, pool workers stopped), with the shell's code 143."""
    print("terminated: finished cells are stored; rerun to complete the rest",
          file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def run(args: argparse.Namespace) -> int:
    from geobench.publish.output import check_writable
    from geobench.report.leaderboard import publish
    from geobench.report.overwrite import check_before_run, earlier_record
    from geobench.report.paths import leaderboard_path
    from geobench.report.retired import check_kept
    from geobench.run.runner import RunOptions, run_suite
    from geobench.run.store import stored_configs
    from geobench.suite import load_suite

    loaded = load_suite(args.suite)
    if not args.no_leaderboard:  # before any cell trains: a bad --out costs no run
        page = leaderboard_path(loaded, args.profile, args.store, args.out)
        check_writable(page)
        check_before_run(page, args.store, args.force)
        check_kept(page, earlier_record(page), loaded)
    study = open_study(args, loaded, lambda: stored_configs(args.store), runs=True)
    executor_options = {flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_"))
                        for flag, _, _ in EXECUTOR_FLAGS}
    run_options = RunOptions(
        store=args.store, executor=args.executor, executor_options=executor_options,
        rerun=args.rerun or ("diverged" if args.rerun_diverged else False),
        max_cells=args.max_cells, lease_timeout=args.lease_timeout,
        loggers=tuple(args.logger), log_dir=args.log_dir, threads=args.threads,
        seeds=args.seeds, quiet=args.quiet)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        summary = run_suite(study, run_options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    ran = sum(summary.statuses.values())
    counts = ", ".join(f"{summary.statuses[s]} {s}" for s in RUN_STATUSES)
    elsewhere = f", {summary.elsewhere} run by another process" if summary.elsewhere else ""
    print(f"{len(summary.cells)} cells: {summary.skipped} already stored, {ran} run "
          f"({counts}){elsewhere}")
    code = 1 if summary.statuses[Status.FAILED] else 0  # diverged is a result, not an error
    if not args.no_leaderboard:
        print(f"wrote {publish(study, args.store, args.out, args.force)}")
    return code


def _collect_arguments(p: argparse.ArgumentParser) -> None:
    suite_options(p)
    p.add_argument("--folder", help="the jobs' folder (default: the suite's, else "
                                    "results/slurm)")


def collect(args: argparse.Namespace) -> int:
    from geobench.run.executors.slurm import collect as store_results

    study = open_study(args)
    folder = args.folder or (study.loaded.suite.executor or {}).get("folder", "results/slurm")
    found, done, missing = store_results(study.cells, args.store, folder)
    print(f"collected {found} results from {folder}; {done} were stored already, "
          f"{missing} still missing")
    return 0


COMMANDS = [
    Command("run", "run a suite's missing cells, then publish its leaderboard", _run_arguments,
            run),
    Command("collect", "store results that slurm array tasks have written", _collect_arguments,
            collect),
]
