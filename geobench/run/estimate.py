"""What a profile costs: steps, and hours on a device from a calibration file.

A calibration file (``benchmarks/calibration/calibration_<device>.json``, tracked with the
code and written by ``benchmarks/calibrate.py``; its ``machine``, ``torch``, ``measured``,
``commands`` and ``source`` say where its figures come from) holds, per cost key (backbone
and input; see ``cost_key``), the seconds of one arm's training step at the batch sizes
measured, the seconds of each metric per evaluation and arm, and a cell's start-up (data and
models built). A cell then costs

    start + sum over arms of steps x step(batch) + sum over metrics of evaluations x arms x
    per-evaluation cost,

where a metric is evaluated at step 0, every ``every`` steps and at the last step. A step
at a batch size not measured is scaled linearly from the nearest one measured. A head's
and an objective's cost are taken as part of their backbone's (small beside a CNN's; an
objective's number of views is what a key does not see); a part of a cell with no entry is
named, never guessed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geobench.records import Cell

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration"
SIZE_KEYS = ("size", "channels", "dim", "img_size")  # data params that change a step's cost


def calibration_path(device: str, folder: Path = CALIBRATION) -> Path:
    return folder / f"calibration_{device}.json"


def _short(component: dict[str, Any], keys: tuple[str, ...]) -> str:
    """``name`` followed by the values of ``keys`` the component has, e.g. ``timm(resnet18,
    cifar_stem)``; a true flag is written as its name."""
    parts = [k if v is True else str(v) for k, v in
             ((k, component.get(k)) for k in keys) if v not in (None, False)]
    return component["name"] + (f"({','.join(parts)})" if parts else "")


def cost_key(record: dict[str, Any]) -> str:
    """What sets the cost of one arm's step: backbone and input, e.g. ``timm(resnet18,
    cifar_stem) | cifar10``."""
    backbone = _short(record["backbone"], ("model", "depth", "width", "cifar_stem",
                                           "img_size", "patch_size"))
    return f"{backbone} | {_short(record['data'], SIZE_KEYS)}"


def cell_device(cell: Cell) -> str:
    """The device the cell's ``train.device`` names: cpu, cuda or auto (either)."""
    return next(iter(cell.arms.values()))["train"].get("device") or "auto"


def evaluations(every: int | None, total: int) -> int:
    """Steps at which a metric runs: 0, every, 2 every, ... and always ``total``."""
    if not every:
        return 1
    return total // every + 1 + (1 if total % every else 0)


def cell_steps(cell: Cell, dataset_sizes: dict[str, int]) -> int | None:
    """Optimizer steps of the cell (every arm takes them); None when it counts epochs of a
    dataset of unknown size."""
    first = next(iter(cell.arms.values()))
    train, data = first["train"], first["data"]
    if train["steps"] is not None:
        return train["steps"]
    n = data.get("n_train") or dataset_sizes.get(data["name"])
    if n is None:
        return None
    per_epoch = n // min(data["batch_size"], n)
    return train["epochs"] * per_epoch


@dataclass
class Calibration:
    """A calibration file's figures (see the module docstring)."""

    path: Path
    step_s: dict[str, dict[str, float]] = field(default_factory=dict)
    metric_s: dict[str, dict[str, float]] = field(default_factory=dict)
    start_s: dict[str, float] = field(default_factory=dict)
    dataset_sizes: dict[str, int] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)
    about: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Calibration:
        doc = json.loads(path.read_text())
        return cls(path, doc.get("step_s", {}), doc.get("metric_s", {}), doc.get("start_s", {}),
                   doc.get("dataset_sizes", {}), doc.get("peak_mb", {}),
                   {k: v for k, v in doc.items() if k not in (
                       "step_s", "metric_s", "start_s", "dataset_sizes", "peak_mb")})

    def step(self, key: str, batch: int) -> float | None:
        """Seconds of one arm's step at ``batch``: measured, or scaled from the nearest."""
        table = {int(b): s for b, s in self.step_s.get(key, {}).items()}
        if not table:
            return None
        nearest = min(table, key=lambda b: (abs(b - batch), b))
        return table[nearest] * batch / nearest


@dataclass
class Estimate:
    """Seconds of a list of cells on one device, and what could not be priced."""

    seconds: float = 0.0
    missing: Counter = field(default_factory=Counter)


def estimate(cells: list[Cell], calibration: Calibration) -> Estimate:
    """Price every cell with ``calibration``; unpriced parts are counted in ``missing``."""
    out = Estimate()
    for cell in cells:
        total = cell_steps(cell, calibration.dataset_sizes)
        first = next(iter(cell.arms.values()))
        if total is None:
            out.missing[f"size of dataset {first['data']['name']!r}"] += 1
            continue
        key = cost_key(first)
        start = calibration.start_s.get(key)
        if start is None:
            out.missing[f"start-up of {key}"] += 1
        out.seconds += start or 0.0
        for record in cell.arms.values():
            key = cost_key(record)
            step = calibration.step(key, record["data"]["batch_size"])
            if step is None:
                out.missing[f"step of {key}"] += 1
            out.seconds += (step or 0.0) * total
            for metric in record["metrics"]:
                cost = calibration.metric_s.get(metric["name"], {}).get(key)
                if cost is None:
                    out.missing[f"metric {metric['name']} on {key}"] += 1
                out.seconds += (cost or 0.0) * evaluations(metric.get("every"), total)
    return out


def peak_mb(cells: list[Cell], calibration: Calibration) -> tuple[float | None, list[str]]:
    """The largest peak resident memory (MiB) calibrated for a cost key of ``cells`` — what
    one worker running them needs at most — and the cost keys with no figure."""
    keys = sorted({cost_key(record) for cell in cells for record in cell.arms.values()})
    known = [calibration.peak_mb[k] for k in keys if k in calibration.peak_mb]
    return (max(known) if known else None), [k for k in keys if k not in calibration.peak_mb]


def lockstep_steps(cells: list[Cell], dataset_sizes: dict[str, int]) -> tuple[int, int, int]:
    """Total steps over the cells (each cell's arms step together), the same counted per arm,
    and the cells whose step count is unknown."""
    lockstep = per_arm = unknown = 0
    for cell in cells:
        steps = cell_steps(cell, dataset_sizes)
        if steps is None:
            unknown += 1
            continue
        lockstep += steps
        per_arm += steps * len(cell.arms)
    return lockstep, per_arm, unknown


def cost_lines(cells: list[Cell], devices: tuple[str, ...] = ("cuda", "cpu"),
               folder: Path = CALIBRATION) -> list[str]:
    """What ``geobench show`` prints: steps, then hours per device or why there are none."""
    sizes: dict[str, int] = {}
    calibrations = {}
    for device in devices:
        path = calibration_path(device, folder)
        if path.exists():
            calibrations[device] = Calibration.read(path)
            sizes = {**calibrations[device].dataset_sizes, **sizes}
    lockstep, per_arm, unknown = lockstep_steps(cells, sizes)
    arms = len(cells[0].arms) if cells else 0
    lines = [f"steps: {lockstep:,} lockstep ({arms} arms each step), {per_arm:,} arm steps"
             + (f"; {unknown} cells count epochs of a dataset of unknown size" if unknown
                else "")]
    for device in devices:
        unit = "GPU" if device == "cuda" else device.upper()
        used = {cell_device(c) for c in cells}
        if cells and device not in used and "auto" not in used:
            lines.append(f"{unit}-hours: — (every cell sets train.device: "
                         f"{', '.join(sorted(used))})")
            continue
        calibration = calibrations.get(device)
        if calibration is None:
            lines.append(f"{unit}-hours: not estimated — no calibration file "
                         f"{calibration_path(device, folder)} (benchmarks/calibrate.py "
                         f"--device {device} writes it)")
            continue
        result = estimate(cells, calibration)
        where, name = calibration.about.get("machine", "?"), calibration.path.name
        if result.missing and not result.seconds:
            lines.append(f"{unit}-hours: not estimated — {name} prices none of it: "
                         f"{_gaps(result.missing)}")
        elif result.missing:
            lines.append(f"{unit}-hours: at least {result.seconds / 3600:.2f} on {where}; not "
                         f"calibrated in {name}: {_gaps(result.missing)}")
        else:
            lines.append(f"{unit}-hours: about {result.seconds / 3600:.2f} on {where} ({name})")
    if "cpu" in calibrations:
        lines.append(memory_line(cells, calibrations["cpu"]))
    return lines


def memory_line(cells: list[Cell], calibration: Calibration) -> str:
    """What ``geobench show`` prints of a profile's memory: the peak per worker."""
    peak, missing = peak_mb(cells, calibration)
    name = calibration.path.name
    if peak is None:
        return (f"memory: not calibrated in {name} (benchmarks/calibrate.py --memory "
                "measures it)")
    gaps = f"; not calibrated: {', '.join(missing)}" if missing else ""
    return (f"memory: at most about {peak / 1024:.1f} GiB per worker (the largest cell's "
            f"peak, {name}){gaps}")


def _gaps(missing: Counter, shown: int = 3) -> str:
    """The ``shown`` most frequent unpriced parts, with how many more there are."""
    gaps = "; ".join(f"{what} ({n}x)" for what, n in missing.most_common(shown))
    more = len(missing) - shown
    return gaps + (f"; and {more} more" if more > 0 else "")
