"""Rough compute estimate of a grid from the measured training throughput.

A cell's work is counted in images through a training step: steps x batch size x 2 views x
arms. It is priced at the throughput that ``benchmarks/train_throughput.py`` measured for a
SimCLR ResNet-18 step on 3x32x32 images — a yardstick, to be scaled by a model's own cost.
"""

from __future__ import annotations

import json
from pathlib import Path

from geobench.records import Cell

THROUGHPUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
DATASET_SIZES = {"cifar10": 50000, "cifar100": 50000}  # training images, for epoch counts


def images(cell: Cell) -> int | None:
    """Images through a training step over the whole cell (None: dataset size unknown)."""
    arm = next(iter(cell.arms.values()))
    train, data = arm["train"], arm["data"]
    size = data["batch_size"]
    if train["steps"] is not None:
        steps = train["steps"]
    else:
        n = data.get("n_train") or DATASET_SIZES.get(data["name"])
        if n is None:
            return None
        steps = train["epochs"] * (n // min(size, n))
    return steps * size * 2 * len(cell.arms)


def gpu_hours(cells: list[Cell], device: str = "cuda") -> str:
    """One line: the estimate, or why there is none."""
    path = THROUGHPUT / f"train_throughput_{device}.json"
    if not path.exists():
        return (f"GPU-hours: not estimated — no {device} throughput measured yet "
                f"(scripts/gpu_check.sh writes {path.name})")
    figures = json.loads(path.read_text())
    rate = max(figures["images_per_s"].values())
    counts = [images(c) for c in cells]
    known = [n for n in counts if n is not None]
    note = f"; {len(counts) - len(known)} cells of unknown dataset size left out" \
        if len(known) < len(counts) else ""
    hours = sum(known) / rate / 3600
    return (f"GPU-hours: about {hours:.1f} at {rate:.0f} img/s ({figures.get('name')}, SimCLR "
            f"ResNet-18 step as yardstick){note}")
