"""Where a training step's time goes: ``torch.profiler`` over the engine's step phases.

Subjects: the SimCLR ResNet-18 step of ``train_throughput.py`` (3x32x32, two views) and,
with ``--suite``, the first design point of each suite's profile (``--profile``, default
``full``), shortened as ``geobench preflight`` does (``--steps`` steps, batch capped by
``--batch``). Each subject runs twice on the current device: first without its metrics under
the profiler, which starts after ``--warmup`` steps so that start-up, cuDNN autotuning and
compilation stay out; then unprofiled with its metrics, for the wall time per step and each
metric's cost per call (from the cell's own timing).

Printed per subject (markdown tables, for docs/performance.md):

- the split of one step by the engine's phases (``geobench.train.phases``): host ms per step
  and share of the step's wall time, and on CUDA the device ms per step (kernels launched
  inside the phase) and the host's ms per step waiting for the device
  (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, blocking ``cudaMemcpy``...);
  ``python`` is the wall time outside every phase (the loop's own bookkeeping);
- the top operators by self time (host on the CPU, device on CUDA);
- the unprofiled ms per step, and the metrics' cost per call spread over the steps of the
  real (unshortened) run at each metric's cadence.

    python benchmarks/profile_step.py [--device cpu|cuda] [--batch 256] [--steps 40]
    python benchmarks/profile_step.py --suite suites/mirror_cifar.yaml --fake-data /tmp/d
    python benchmarks/profile_step.py --no-simclr --suite suites/*.yaml --batch 16

``--fake-data DIR`` writes random files in the real formats (``scripts/fake_data.py``) to a
folder without datasets and points ``$GEOBENCH_DATA`` at it, for machines without them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate
from torch.autograd.profiler_util import FunctionEvent
from train_throughput import make_cell  # this folder: the SimCLR ResNet-18 step

from geobench.contract.manager import describe_failure, registry
from geobench.records import Cell, CellResult
from geobench.run.estimate import Calibration, calibration_path, cell_steps, evaluations
from geobench.run.preflight import Shortening, design_points, shortened
from geobench.study import Study
from geobench.train.device import resolve_device
from geobench.train.engine import run_cell
from geobench.train.phases import PHASES, PREFIX

SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def suite_cells(path: str, args: argparse.Namespace) -> tuple[Cell, Cell, Cell]:
    """The profile's first design point, its shortened copy and that copy without metrics
    (the profiled run: metrics are costed from the unprofiled one)."""
    reg = registry()
    first = design_points(Study.open(path, args.profile, registry=reg).cells)[0]
    how = Shortening(steps=args.steps, batch=args.batch, device=args.device,
                     data={"verify_md5": False})
    bare = replace(first, arms={name: {**record, "metrics": []}
                                for name, record in first.arms.items()})
    return first, shortened(first, reg, how), shortened(bare, reg, how)


def metric_ms_per_step(real: Cell, short: Cell, result: CellResult, device: str) -> float:
    """Each metric's cost per call (measured in the short run) times its calls in the real
    run, per real step (0 when the real run's length is unknown)."""
    sizes = Calibration.read(calibration_path(device)).dataset_sizes \
        if calibration_path(device).exists() else {}
    total, steps = cell_steps(real, sizes), result.timing.steps
    if not total or not steps:
        return 0.0
    every = {comp.id: comp.params.every for spec in short.specs.values() for comp in spec.metrics}
    timing, cost = result.timing, 0.0
    for mid, seconds in timing.metric.items():
        per_eval = timing.calls[mid] / evaluations(every[mid], steps)
        cost += seconds / timing.calls[mid] * per_eval * evaluations(every[mid], total)
    return 1e3 * cost / total


def _inside(event: FunctionEvent, name: str) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == name:
            return True
        parent = parent.cpu_parent
    return False


def profiled(cell: Cell, warmup: int, device: str) -> tuple[Any, float, int]:
    """Run ``cell`` with the profiler on from step ``warmup`` (a multiple of the engine's
    check interval) to the end: the profiler, the window's wall seconds and its steps."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities)
    began: list[tuple[int, float]] = []

    def progress(step: int, total: int, loss: float) -> None:
        if not began and step >= warmup:
            began.append((step, time.perf_counter()))
            prof.start()

    result = run_cell(cell, progress=progress)
    if result.status.value != "complete":
        raise RuntimeError(f"the profiled run ended {result.status.value}: {result.error}")
    if not began:
        raise RuntimeError(f"--steps must exceed --warmup ({warmup})")
    wall = time.perf_counter() - began[0][1]
    prof.stop()
    return prof, wall, result.timing.steps - began[0][0]


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value >= 1 else f"{value:.3f}"


def phase_table(prof: Any, wall: float, steps: int,
                device: str) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: phase, host ms/step, share of the step's wall time, and on CUDA
    device ms/step and the host's ms/step waiting for the device."""
    host: dict[str, float] = defaultdict(float)
    dev: dict[str, float] = defaultdict(float)
    wait: dict[str, float] = defaultdict(float)
    events = prof.events()
    for event in events:
        if event.name.startswith(PREFIX):
            name = event.name[len(PREFIX):]
            host[name] += event.cpu_time_total / 1e3 / steps
            dev[name] += event.device_time_total / 1e3 / steps
    for event in events:
        if event.name in SYNCS:
            owner = next((p for p in PHASES if _inside(event, PREFIX + p)), "python")
            wait[owner] += event.cpu_time_total / 1e3 / steps
    for table in (host, dev, wait):  # the profiled run has no metrics: an empty phase
        table.pop("metrics", None)
        table.pop("observe", None)
    step_ms = 1e3 * wall / steps
    host["python"] = step_ms - sum(host.values())
    names = [p for p in PHASES if p in host] + ["python"]
    rows = [[p if p != "python" else "python (outside every phase)", _ms(host[p]),
             f"{host[p] / step_ms:.1%}", _ms(dev[p]), _ms(wait[p])] for p in names]
    rows.append(["step (wall)", _ms(step_ms), "100%", _ms(sum(dev.values())),
                 _ms(sum(wait.values()))])
    headers = ["phase", "host ms/step", "share", "device ms/step", "waiting ms/step"]
    if device != "cuda":
        headers, rows = headers[:3], [row[:3] for row in rows]
    return headers, rows


def top_operators(prof: Any, steps: int, k: int,
                  device: str) -> tuple[list[str], list[list[str]]]:
    """The ``k`` operators with the most self time (device time on CUDA), per step."""
    key = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    ops = [e for e in prof.key_averages() if not e.key.startswith(PREFIX)]
    ops.sort(key=lambda e: getattr(e, key), reverse=True)
    rows = [[e.key[:48], f"{e.count / steps:g}", _ms(e.self_cpu_time_total / 1e3 / steps),
             _ms(e.self_device_time_total / 1e3 / steps)] for e in ops[:k]]
    headers = ["operator", "calls/step", "self host ms/step", "self device ms/step"]
    if device != "cuda":
        headers, rows = headers[:3], [row[:3] for row in rows]
    return headers, rows


def report(title: str, real: Cell, short: Cell, bare: Cell, args: argparse.Namespace) -> None:
    """The profiled split (printed first, so a time limit that stops the metrics' run
    keeps it), then the unprofiled run with its metrics."""
    device = resolve_device(next(iter(short.specs.values())).train.device).type
    prof, wall, steps = profiled(bare, args.warmup, device)
    print(f"\n### {title}\n")
    print(f"{device}, {steps} profiled steps after {args.warmup} (the profiler adds its "
          "own overhead)\n")
    for headers, rows in (phase_table(prof, wall, steps, device),
                          top_operators(prof, steps, args.top, device)):
        print(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True,
                       colalign=("left",) + ("right",) * (len(headers) - 1)))
        print(flush=True)
    stamps: list[tuple[int, float]] = []
    plain = run_cell(short, progress=lambda step, total, loss: stamps.append(
        (step, time.perf_counter())))
    if plain.status.value != "complete":
        raise RuntimeError(f"the run with metrics ended {plain.status.value}: {plain.error}")
    after = [(s, t) for s, t in stamps if s >= args.warmup]
    (s0, t0), (s1, t1) = after[0], after[-1]
    step_ms = 1e3 * (t1 - t0) / max(1, s1 - s0)
    metrics_ms = metric_ms_per_step(real, short, plain, device)
    print(f"Unprofiled, with the metrics: {_ms(step_ms)} ms per step after step "
          f"{args.warmup}; the metrics at the real run's cadence add {_ms(metrics_ms)} ms per "
          f"step ({metrics_ms / step_ms:.1%})." if short.arms != bare.arms else
          f"Unprofiled: {_ms(step_ms)} ms per step after step {args.warmup}.", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], help="replace train.device (default: "
                    "the SimCLR step on cuda when available, a suite on its own train.device)")
    ap.add_argument("--batch", type=int, help="SimCLR batch (default 256 on CUDA, 8 on the "
                    "CPU); for suites a cap on the profile's batch size")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10, help="steps before the profiler starts "
                    "(a multiple of 10)")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--suite", nargs="*", default=[])
    ap.add_argument("--profile", default="full")
    ap.add_argument("--no-simclr", action="store_true", help="only the suites")
    ap.add_argument("--fake-data", type=Path, help="write random files in the real formats "
                    "here and read the datasets from them")
    args = ap.parse_args()
    if args.fake_data is not None:
        from geobench_data.fakes import write_cifar, write_mnist

        held = [n for n in ("cifar-10-batches-py", "cifar-100-python", "fashion-mnist", "mnist")
                if (args.fake_data / n).exists()]
        if held:
            raise SystemExit(f"--fake-data {args.fake_data}: already holds {', '.join(held)}; "
                             "give a folder without datasets (random files would replace them)")

        write_cifar(args.fake_data, 5000, 1000)
        for name in ("fashion-mnist", "mnist"):
            write_mnist(args.fake_data / name, 5000, 1000)
        os.environ["GEOBENCH_DATA"] = str(args.fake_data)
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
    print(f"GPU: {gpu}, torch {torch.__version__}, {torch.get_num_threads()} CPU threads; "
          "a suite runs on its profile's train.device unless --device says otherwise")
    if not args.no_simclr:
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        simclr = argparse.Namespace(**{**vars(args), "device": device, "batch": args.batch
                                       or (256 if device == "cuda" else 8)})
        cell = make_cell(simclr, "fp32")  # the fp32 eager SimCLR step
        report(f"SimCLR ResNet-18 (3x32x32), batch {simclr.batch} x 2 views", cell, cell, cell,
               simclr)
    for path in args.suite:  # one failing suite does not stop the others
        try:
            real, short, bare = suite_cells(path, args)
            point = real.label(16)
            point = point if len(point) <= 80 else point[:79] + "…"
            report(f"{path}, profile {args.profile}, first design point ({point})", real,
                   short, bare, args)
        except Exception as exc:  # noqa: BLE001 - reported, and the next suite runs
            print(f"\n### {path}: not profiled: {describe_failure(exc)}", flush=True)


if __name__ == "__main__":
    main()
