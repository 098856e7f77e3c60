"""geobench: run suites of representation-geometry benchmarks and publish their leaderboards.

Plugins add commands of their own (`geobench plugins` lists what each one provides)."""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from tabulate import tabulate

from geobench.contract.errors import RegistryError, did_you_mean
from geobench.contract.hookspecs import KINDS
from geobench.records import Status
from geobench.report.output import OutputError, check_writable
from geobench.run.leases import LEASE_TIMEOUT_S
from geobench.run.store import DEFAULT_STORE, StoreError
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError, parse_yaml

RUN_STATUSES = (Status.COMPLETE, Status.DIVERGED, Status.FAILED)


def _suite_args(p: argparse.ArgumentParser, store: bool = True) -> None:
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


def _seconds(text: str) -> float:
    """A finite number of seconds >= 1 (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: a finite number of seconds >= 1")
    return value


def _count(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: an integer >= 1")
    return int(text)


class Command(NamedTuple):
    summary: str
    main: Callable[[list[str]], int]
    plugin: str


class PluginCommands:
    """What ``register_commands(cli)`` receives: ``cli.add(name, summary, main)``."""

    def __init__(self, plugin: str, commands: dict[str, Command]) -> None:
        self.plugin, self.commands = plugin, dict(commands)

    def add(self, name: str, summary: str, main: Callable[[list[str]], int]) -> None:
        if name in COMMANDS or name in self.commands:
            raise RegistryError(f"command {name!r} is already defined")
        self.commands[name] = Command(summary, main, self.plugin)


def plugin_commands() -> dict[str, Command]:
    """Every loaded plugin's commands; a plugin whose hook fails or redefines a command is
    skipped with a warning."""
    from geobench.contract.plugins import describe_failure, plugins

    loaded, commands = plugins(), {}
    for name, info in list(loaded.info.items()):
        if "register_commands" not in info.hooks:
            continue
        staged = PluginCommands(name, commands)
        try:
            loaded.call(name, "register_commands", cli=staged)
        except (Exception, SystemExit) as exc:
            loaded.drop(name, "register_commands: " + (
                str(exc) if isinstance(exc, RegistryError) else describe_failure(exc)))
            continue
        commands = staged.commands
    return commands


def run_plugin_command(name: str, command: Command, argv: list[str]) -> int:
    """Run a plugin's command once its plugin has loaded whole (components included)."""
    from geobench.contract.plugins import plugins, registry

    registry()
    if command.plugin not in plugins().info:
        print(f"geobench {name}: plugin {command.plugin!r} was skipped (see the warning "
              "above)", file=sys.stderr)
        return 2
    return command.main(argv)


def parser(extra: dict[str, Command] | None = None) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="geobench", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="run a suite's missing cells, then publish its leaderboard")
    _suite_args(run)
    run.add_argument("--executor", help="registered executor: local, pool, ray, slurm, ... "
                                        "(default: the suite's, else local)")
    for flag, kind, text in EXECUTOR_FLAGS:
        run.add_argument(flag, type=kind, help=text)
    run.add_argument("--rerun", action="store_true", help="rerun cells already in the store")
    run.add_argument("--max-cells", type=_count, help="run at most this many of the missing "
                                                     "cells")
    run.add_argument("--lease-timeout", type=_seconds, default=LEASE_TIMEOUT_S, metavar="S",
                     help="take over a cell another run leased but has not renewed for S "
                          f"seconds (default {LEASE_TIMEOUT_S:.0f})")
    run.add_argument("--quiet", action="store_true", help="no progress output")
    run.add_argument("--logger", action="append", default=[], metavar="NAME",
                     help="experiment tracker fed every series while cells train "
                          "(tensorboard, wandb, ...; beside the suite's loggers:); repeatable")
    run.add_argument("--log-dir", metavar="DIR", help="the loggers' folder (default: logs/ "
                                                      "beside the store)")
    run.add_argument("--no-leaderboard", action="store_true", help="do not publish at the end")
    run.add_argument("--out", help="leaderboard path (default: leaderboards/<suite>.md in the "
                                   "store's folder)")
    lst = sub.add_parser("list", help="registered components with params and origin")
    lst.add_argument("kind", nargs="?", help=f"one of: {', '.join(KINDS)}")
    lst.add_argument("--json", action="store_true")
    show = sub.add_parser("show", help="the expanded cells of a suite")
    _suite_args(show, store=False)
    pre = sub.add_parser("preflight", help="run every design point of a profile for a few "
                                           "steps (nothing is stored)")
    _suite_args(pre, store=False)
    pre.add_argument("--steps", type=_count, default=2, help="steps per design point (2)")
    pre.add_argument("--batch", type=_count, help="cap data.batch_size at this")
    pre.add_argument("--samples", type=_count, help="cap data.n_train and data.n_test at this")
    pre.add_argument("--device", choices=["auto", "cpu", "cuda"], help="replace train.device")
    pre.add_argument("--data", action="append", default=[], metavar="KEY=VALUE",
                     help="dataset param set where the dataset takes it, e.g. "
                          "verify_md5=false; repeatable")
    pre.add_argument("--metric", action="append", default=[], metavar="KEY=VALUE",
                     help="metric param set where a metric takes it, e.g. max_iter=8; "
                          "repeatable")
    val = sub.add_parser("validate", help="check a suite without running it")
    _suite_args(val, store=False)
    res = sub.add_parser("results", help="stored results of a suite's cells")
    _suite_args(res)
    form = res.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="JSON lines, one object per cell")
    form.add_argument("--csv", action="store_true",
                      help="CSV: one row per cell and final value, config flattened")
    lb = sub.add_parser("leaderboard", help="publish a suite's leaderboard from the store")
    _suite_args(lb)
    lb.add_argument("--out", help="markdown path, e.g. leaderboards/<suite>.md to publish "
                                  "(default: leaderboards/<suite>.md in the store's folder)")
    cl = sub.add_parser("claims", help="the suite's claims with effect, 95%% CI and verdict")
    _suite_args(cl)
    cl.add_argument("--json", action="store_true", help="JSON lines, one object per claim")
    cl.add_argument("--units", action="store_true",
                    help="every unit of every claim and part: the values that entered its "
                         "interval, or why it was left out")
    cl.add_argument("--csv", action="store_true", help="with --units: as CSV")
    cl.add_argument("--beside", metavar="PROFILE",
                    help="a table of each claim's effect and verdict in PROFILE beside "
                         "--profile's, marking the claims whose verdict changes")
    col = sub.add_parser("collect", help="store results that slurm array tasks have written")
    _suite_args(col)
    col.add_argument("--folder", help="the jobs' folder (default: the suite's, else "
                                      "results/slurm)")
    plg = sub.add_parser("plugins", help="loaded plugins: distribution, version, hooks")
    plg.add_argument("--json", action="store_true", help="JSON lines, one object per plugin")
    new = sub.add_parser("new-plugin", help="write a plugin package that installs as is")
    new.add_argument("name", metavar="NAME", help="distribution name, e.g. my-plugin")
    new.add_argument("--dir", default=".", help="folder to write NAME/ into (default: .)")
    for name, command in (extra or {}).items():
        sub.add_parser(name, help=command.summary, add_help=False)
    return ap


def _cells(args):
    loaded = load_suite(args.suite)
    return loaded, _expand(args, loaded, args.profile)


def _expand(args, loaded, profile: str) -> list:
    """``profile``'s cells under the command's ``--set``, ``--only`` and ``--cell-limit``."""
    from geobench.contract.plugins import registry
    from geobench.suite import expand

    return expand(loaded, registry(), profile, _overrides("--set", args.set), _cell_limit(args),
                  _only(args.only))


def _cell_limit(args) -> int:
    """``--cell-limit`` (at least 1), else the default limit."""
    from geobench.suite import CELL_LIMIT

    if args.cell_limit is None:
        return CELL_LIMIT
    if args.cell_limit < 1:
        raise SuiteError(f"--cell-limit {args.cell_limit}: the limit is a count >= 1")
    return args.cell_limit


def _overrides(flag: str, pairs: list[str]) -> dict[str, Any]:
    return {key: values[-1] for key, values in _pairs(flag, pairs).items()}


def _only(pairs: list[str]) -> dict[str, list[Any]]:
    return _pairs("--only", pairs)


def _pairs(flag: str, pairs: list[str]) -> dict[str, list[Any]]:
    """``KEY=VALUE`` options: key -> the YAML values given for it, in order."""
    out: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SuiteError(f"{flag} {pair}: expected KEY=VALUE, e.g. optimizer.lr=0.1")
        out.setdefault(key, []).append(parse_yaml(value, f"{flag} {key}")[0])
    return out


def _out_path(args, loaded) -> Path:
    """``--out`` (a ``.md`` path: the CSV, claims files and figures go beside it), else
    ``leaderboards/<suite>[_<profile>].md`` beside the store (which the default path must
    not leave)."""
    if getattr(args, "out", None):
        if Path(args.out).suffix != ".md":
            raise OutputError(f"--out {args.out}: a leaderboard path ends in .md (its CSV, "
                              "claims files and figures are written beside it)")
        return Path(args.out)
    suffix = "" if args.profile == "smoke" else f"_{args.profile}"
    folder = Path(args.store).parent / "leaderboards"
    out = folder / f"{loaded.suite.name}{suffix}.md"
    if Path(os.path.normpath(out)).parent != Path(os.path.normpath(folder)):  # no symlinks
        raise SuiteError(f"{loaded.path}: leaderboard path {out} leaves {folder}; name the "
                         "suite and profile with [A-Za-z0-9_.-] only, or give --out")
    return out


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM (a scheduler's time limit, ``kill``): leave as Ctrl-C does, through every
    ``finally`` (leases released, pool workers stopped), with the shell's code 143."""
    print("terminated: finished cells are stored; rerun to complete the rest",
          file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def cmd_run(args) -> int:
    from geobench.run.runner import RunOptions, run_suite

    if not args.no_leaderboard:  # before any cell trains: a bad --out costs no run
        check_writable(_out_path(args, load_suite(args.suite)))

    executor_options = {flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_"))
                        for flag, _, _ in EXECUTOR_FLAGS}
    options = RunOptions(
        profile=args.profile, store=args.store, overrides=_overrides("--set", args.set),
        only=_only(args.only),
        executor=args.executor, executor_options=executor_options, rerun=args.rerun,
        max_cells=args.max_cells, cell_limit=_cell_limit(args),
        lease_timeout=args.lease_timeout, loggers=tuple(args.logger),
        log_dir=args.log_dir, quiet=args.quiet)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        summary = run_suite(args.suite, options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    ran = sum(summary.statuses.values())
    counts = ", ".join(f"{summary.statuses[s]} {s}" for s in RUN_STATUSES)
    elsewhere = f", {summary.elsewhere} run by another process" if summary.elsewhere else ""
    print(f"{len(summary.cells)} cells: {summary.skipped} already stored, {ran} run "
          f"({counts}){elsewhere}")
    code = 1 if summary.statuses[Status.FAILED] else 0  # diverged is a result, not an error
    if not args.no_leaderboard:
        return cmd_leaderboard(args) or code
    return code


def cmd_list(args) -> int:
    from geobench.contract.plugins import registry

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
    for kind in kinds:
        print(f"{kind}:")
        for e in (x for x in entries if x.kind == kind):
            print(f"  {e.name:<22} {e.doc}  [{e.origin} {e.version}]")
            for p in e.param_rows():
                print(f"      {p['name']}: {p['type']} = {p['default']}"
                      + (f"  — {p['doc']}" if p["doc"] else ""))
            for name, d in e.fields.items():
                unit = f" [{d.unit}]" if d.unit else ""
                print(f"      -> {name}{unit} ({d.direction}): {d.description}")
    return 0


def cmd_show(args) -> int:
    loaded, cells = _cells(args)
    varied = list(dict.fromkeys(k for c in cells for k in c.varied))
    print(f"{loaded.suite.name} [{args.profile}]: {len(cells)} cells, arms: "
          f"{', '.join(cells[0].arms) if cells else '-'}")
    rows = [[c.id] + [c.varied.get(k, "") for k in varied] for c in cells]
    print(tabulate(rows, headers=["cell"] + varied, tablefmt="github"))
    from geobench.run.estimate import cost_lines

    print("\n".join(cost_lines(cells)))
    return 0


def cmd_preflight(args) -> int:
    from geobench.contract.plugins import registry
    from geobench.run.preflight import HEADERS, Shortening, design_points, preflight

    _, cells = _cells(args)
    data, metrics = (_overrides(flag, pairs) for flag, pairs in (("--data", args.data),
                                                                  ("--metric", args.metric)))
    how = Shortening(args.steps, args.batch, args.samples, args.device, data, metrics)
    print(f"{args.suite} [{args.profile}]: {len(design_points(cells))} design points of "
          f"{len(cells)} cells, {args.steps} steps each", flush=True)
    runs = preflight(cells, registry(), how, lambda run: print(
        f"  {run.result.status.value}: {run.label()}", flush=True))
    print(tabulate([run.row() for run in runs], headers=HEADERS, tablefmt="github"))
    failed = [run for run in runs if run.result.status != Status.COMPLETE]
    for run in failed:
        print(f"{run.label()}: {run.result.error}", file=sys.stderr)
    return 1 if failed else 0


def cmd_validate(args) -> int:
    loaded, cells = _cells(args)
    print(f"{args.suite}: valid ({len(cells)} cells in profile {args.profile!r})")
    return 0


def cmd_results(args) -> int:
    from geobench.run.store import Store

    _, cells = _cells(args)
    if args.csv:  # read only: a store that is not there is an error, not a new file
        from geobench.report.results import missing_rows, result_rows, write_csv

        found = result_rows(args.store, cells=[c.id for c in cells])
        held = {r["cell"] for r in found}
        write_csv(found + missing_rows([c for c in cells if c.id not in held]), sys.stdout)
        return 0
    store = Store(args.store, read_only=True)
    stored = store.cells([c.id for c in cells])
    store.close()
    rows = []
    for cell in cells:
        row = stored.get(cell.id)
        obj = {"cell": cell.id, "trial_seed": cell.trial_seed, "config": cell.config(),
               "status": row["status"] if row else str(Status.MISSING),
               "error": row["error"] if row else None,
               "metrics": row["metrics"] if row else {}}
        if args.json:
            print(json.dumps(obj))
        else:
            rows.append([cell.id, obj["status"], cell.label()])
    if not args.json:
        print(tabulate(rows, headers=["cell", "status", "varied"], tablefmt="github"))
    return 0


def cmd_leaderboard(args) -> int:
    from geobench.contract.plugins import registry
    from geobench.report.leaderboard import render
    from geobench.run.store import Store

    loaded, cells = _cells(args)
    out = _out_path(args, loaded)
    store = Store(args.store, read_only=True)
    try:
        render(loaded, cells, store, out, registry())
    finally:
        store.close()
    print(f"wrote {out}")
    return 0


def cmd_claims(args) -> int:
    from geobench.contract.plugins import registry
    from geobench.report.claims import evaluate
    from geobench.report.claims_report import (
        UNIT_COLUMNS,
        beside_table,
        claims_table,
        unit_rows,
        units_csv,
    )
    from geobench.report.values import StoredValues
    from geobench.run.store import Store

    if args.csv and not args.units:
        print("geobench claims: --csv goes with --units (the unit rows as CSV)", file=sys.stderr)
        return 2
    if args.beside and (args.units or args.json):
        print("geobench claims: --beside prints one table; leave out --units and --json",
              file=sys.stderr)
        return 2
    if args.beside == args.profile:
        print(f"geobench claims: --beside {args.beside} is the profile shown; name another "
              "profile", file=sys.stderr)
        return 2
    loaded, cells = _cells(args)
    if not loaded.suite.claims:
        print(f"{args.suite}: the suite declares no claims", file=sys.stderr)
        return 0
    profiles = [cells] + ([_expand(args, loaded, args.beside)] if args.beside else [])
    store = Store(args.store, read_only=True)
    try:
        verdicts, *beside = [evaluate(loaded, c, StoredValues(store, c), registry())
                             for c in profiles]
    finally:
        store.close()
    if args.beside:
        print(beside_table({args.beside: beside[0], args.profile: verdicts}), end="")
    elif args.units and args.csv:
        print(units_csv(verdicts), end="")
    elif args.units:
        print(tabulate(unit_rows(verdicts), headers=UNIT_COLUMNS))
    elif args.json:
        for v in verdicts:
            print(json.dumps(v.as_json()))
    else:
        print(claims_table(verdicts), end="")
    return 0


def cmd_collect(args) -> int:
    from geobench.run.executors.slurm import load_result, result_path
    from geobench.run.provenance import provenance
    from geobench.run.store import Store

    loaded, cells = _cells(args)
    default = loaded.suite.executor or {}
    folder = args.folder or default.get("folder", "results/slurm")
    store = Store(args.store)
    try:
        done = store.done_ids([c.id for c in cells])
        found = [(c, result_path(folder, c.id)) for c in cells if c.id not in done]
        found = [(c, p) for c, p in found if p.exists()]
        results = [(cell, load_result(path, cell.id)) for cell, path in found]  # all, then store
        for cell, result in results:
            store.write(cell, result, provenance())
    finally:
        store.close()
    missing = len(cells) - len(done) - len(found)
    print(f"collected {len(found)} results from {folder}; {len(done)} were stored already, "
          f"{missing} still missing")
    return 0


def cmd_plugins(args) -> int:
    from geobench.contract.plugins import plugins, registry

    registry()  # a plugin whose components fail to register is dropped (with a warning)
    for info in plugins().info.values():
        if args.json:
            print(json.dumps({"name": info.name, "dist": info.dist, "version": info.version,
                              "hooks": list(info.hooks)}))
        else:
            print(f"{info.name:<12} {info.dist} {info.version}: {', '.join(info.hooks)}")
    return 0


def cmd_new_plugin(args) -> int:
    from geobench.scaffold import write_plugin

    try:
        target = write_plugin(args.name, args.dir)
    except OSError as exc:
        raise RegistryError(f"new-plugin: cannot write {exc.filename}: {exc.strerror}") from None
    print(f"wrote {target}\nnext:\n  cd {target} && pip install -e '.[test]' && pytest\n"
          "  geobench list heads\n  geobench validate suites/example.yaml")
    return 0


COMMANDS = {"run": cmd_run, "list": cmd_list, "show": cmd_show, "preflight": cmd_preflight,
            "validate": cmd_validate,
            "results": cmd_results, "leaderboard": cmd_leaderboard, "claims": cmd_claims,
            "collect": cmd_collect, "plugins": cmd_plugins, "new-plugin": cmd_new_plugin}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = plugin_commands()
    try:
        if argv and argv[0] in extra:
            return run_plugin_command(argv[0], extra[argv[0]], argv[1:])
        args = parser(extra).parse_args(argv)
        return COMMANDS[args.command](args)
    except (SuiteError, RegistryError, StoreError, OutputError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished cells are stored; rerun to complete the rest",
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # a reader such as `head` stopped reading: stop writing quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
