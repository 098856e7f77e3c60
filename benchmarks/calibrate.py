"""Calibrate ``geobench show``'s cost estimates on this machine: run design points of the
given suites' profile for a few steps and record, per cost key (backbone and input;
``geobench.run.estimate.cost_key``), the seconds of one arm's step at each batch
size met, each metric's seconds per evaluation and arm, and a cell's start-up; with
``--memory``, instead, every design point runs and each cost key gets the largest peak
resident memory of its design points (what one pool worker needs). The figures are merged
into ``benchmarks/calibration/calibration_<device>.json`` (tracked: commit it) with the
machine, torch version, date, the commands that wrote it and their source; a design point
runs only when it prices something not yet measured in this run. With ``--store``, nothing
runs: the figures are the medians of the timing that a run of the profile stored with its
cells (``geobench.run.calibrate.from_runs``), on this machine (the cells' CPU must be this
one's).

    python benchmarks/calibrate.py suites/collapse.yaml [...] [--profile smoke] \
        [--device cpu] [--steps 20] [--batch N] [--samples N] [--data KEY=VALUE] [--memory]
    python benchmarks/calibrate.py suites/mirror_flow.yaml --profile full --store STORE
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

from geobench.contract.manager import registry
from geobench.records import Cell, Status
from geobench.run.calibrate import calibrate, from_runs, merge
from geobench.run.estimate import CALIBRATION, calibration_path
from geobench.run.preflight import Shortening
from geobench.run.provenance import cpu_model
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import parse_yaml

DATASET_SIZES = {"cifar10": 50000, "cifar100": 50000, "fashion_mnist": 60000, "mnist": 60000}


def _machine(device: str) -> str:
    """The GPU's name, or the CPU's model and SIMD level with the cores."""
    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"{cpu_model()}, {os.cpu_count()} cores; 1 torch thread"


def stored_timing(cells: list[Cell], store: str) -> dict[str, Any]:
    """``from_runs`` of ``cells`` in ``store``; exits when they ran on another CPU."""
    rows = Store(store, read_only=True).cells([c.id for c in cells])
    cpus = {row["provenance"].get("cpu") or "an unrecorded CPU" for row in rows.values()}
    if cpus - {cpu_model()}:
        sys.exit(f"{store}: the cells ran on {', '.join(sorted(cpus))}; this machine is "
                 f"{cpu_model()}: calibrate on the machine that ran them")
    tables = from_runs(cells, rows)
    print(f"{store}: {len(rows)} of {len(cells)} cells stored, "
          f"{len(tables.get('start_s', {}))} cost keys timed", flush=True)
    return tables


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suites", nargs="+")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, help="cap data.batch_size (calibrates that batch)")
    ap.add_argument("--samples", type=int, help="cap data.n_train and data.n_test")
    ap.add_argument("--data", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", type=Path, default=CALIBRATION)
    ap.add_argument("--memory", action="store_true",
                    help="run every design point and record only its peak memory")
    ap.add_argument("--store", help="read the timing a run stored with the profile's cells "
                                    "in this results store instead of running anything")
    args = ap.parse_args()
    torch.set_num_threads(1)  # as a pool worker runs: one torch thread per cell
    data = {}
    for pair in args.data:
        key, _, value = pair.partition("=")
        data[key] = parse_yaml(value, f"--data {key}")[0]
    how = Shortening(args.steps, args.batch, args.samples, args.device, data)
    reg, done, new = registry(), set(), {}

    def report(cell, result) -> None:
        if result.status != Status.COMPLETE:
            print(f"{cell.suite}: {cell.label()}: {result.status.value}: {result.error}",
                  file=sys.stderr)
        else:
            print(f"{cell.suite}: {cell.label(24)}: {result.timing.loop:.2f} s loop, "
                  f"{result.timing.start:.2f} s start-up, peak {result.peak_mb} MiB", flush=True)

    for suite in args.suites:
        loaded = load_suite(suite)
        if args.profile != "smoke" and args.profile not in loaded.suite.profiles:
            print(f"{suite}: no profile {args.profile!r}, skipped")
            continue
        cells = Study(loaded, reg, args.profile).cells
        if args.store:
            merge(new, stored_timing(cells, args.store))
        else:
            merge(new, calibrate(cells, reg, how, report, done, args.memory))
    path = calibration_path(args.device, args.out)
    doc = json.loads(path.read_text()) if path.exists() else {}
    merge(doc, new)
    command = "python benchmarks/calibrate.py " + " ".join(sys.argv[1:])
    doc.update(machine=_machine(args.device), torch=torch.__version__,
               measured=datetime.date.today().isoformat(),
               commands=[*(c for c in doc.get("commands", []) if c != command), command],
               source="measured by benchmarks/calibrate.py on the machine named",
               dataset_sizes={**DATASET_SIZES, **doc.get("dataset_sizes", {})})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
