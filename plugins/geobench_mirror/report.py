"""Histogram of effective neuron weights and pruning curves per arm, from stored results:

    geobench mirror-figures suites/mirror_flow.yaml [--profile smoke]
        [--store results/geobench.sqlite] [--out FOLDER]

Reads the final ``neuron_histogram.bin_<i>`` and ``pruning_curve.acc_<percent>`` values of
every finished cell, averages them over seeds, and draws one panel per row of the suite's
leaderboard (its ``leaderboard.rows``, else the varied settings; seed and arm excluded), one
line per arm: the histogram (bin edges those of the suite's ``neuron_histogram``) to
``<suite>_neurons.png`` (``<suite>_<profile>_`` for a profile other than smoke) and the
test accuracy against the pruned share (the levels of the suite's ``pruning_curve``) to
``..._pruning.png`` beside it, in the ``--out`` folder: by default ``leaderboards/``
beside the store, where ``geobench leaderboard`` writes the suite's leaderboard (whose
description links the figures). An ``--out`` ending in ``.png`` names the histogram
itself, the pruning figure ``neurons`` replaced by ``pruning`` in its name.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from typing import Any

import numpy as np
from pydantic import BaseModel

from geobench.figures import (
    StoredSuite,
    figure_bytes,
    figure_options,
    figure_path,
    metric_key,
    read_stored,
    write_files,
)
from geobench_mirror.neurons import HistogramParams, PruningParams

KEY = "neuron_histogram"
PRUNING = "pruning_curve"


def _params(cell_arms: dict, name: str, model: type[BaseModel]) -> Any:
    spec = next(m for m in next(iter(cell_arms.values()))["metrics"] if m["name"] == name)
    return model.model_validate({k: v for k, v in spec.items() if k not in ("name", "id")})


def _edges(cell_arms: dict) -> np.ndarray:
    params = _params(cell_arms, KEY, HistogramParams)
    return np.logspace(np.log10(params.low), 0.0, params.bins + 1)


def _percents(cell_arms: dict) -> list[int]:
    return [round(100 * f) for f in _params(cell_arms, PRUNING, PruningParams).fractions]


def collect(stored: StoredSuite, metric: str = KEY
            ) -> tuple[dict[str, dict[str, np.ndarray]], np.ndarray | None]:
    """{panel label: {arm: mean over seeds of the metric's vector}} and its x values (the
    histogram's bin edges, or the pruning curve's percentages), over the complete cells; a
    panel per row of the suite's leaderboard (``StoredSuite.row_keys``, the arm aside)."""
    finals = stored.finals()
    keys = [k for k in stored.row_keys if k != "arm"]
    values: dict[str, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    xs = None
    for cell in stored.cells:
        if cell.id not in finals:
            continue
        if xs is None:
            xs = _edges(cell.arms) if metric == KEY else np.array(_percents(cell.arms))
        fields = ([f"bin_{i}" for i in range(len(xs) - 1)] if metric == KEY
                  else [f"acc_{p}" for p in xs])
        panel = ", ".join(f"{k}={cell.varied[k]}" for k in keys if k in cell.varied
                          ) or "all cells"
        for arm in cell.arms:
            vector = [finals[cell.id].get(metric_key(arm, f"{metric}.{f}")) for f in fields]
            if None not in vector:
                values[panel][arm].append(np.array(vector))
    means = {panel: {arm: np.mean(v, axis=0) for arm, v in arms.items()}
             for panel, arms in values.items()}
    return means, xs


def plot(means: dict, xs: np.ndarray, title: str, metric: str = KEY) -> bytes:
    """The panels of ``means`` over ``xs`` as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted(means)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False,
                             sharey=True)
    for ax, panel in zip(axes[0], panels, strict=True):
        for arm, vector in means[panel].items():
            if metric == KEY:
                ax.stairs(vector, xs, label=arm, lw=1.6)
            else:
                ax.plot(xs, vector, marker=".", label=arm, lw=1.4)
        if metric == KEY:
            ax.set_xscale("log")
            ax.set_xlabel("effective weight / layer max  (bin 0 includes all below)")
        else:
            ax.set_xlabel("weights pruned (%, global magnitude)")
        ax.set_title(panel, fontsize=9)
    axes[0][0].set_ylabel("fraction of hidden units (mean over seeds)" if metric == KEY
                          else "test accuracy (mean over seeds)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    try:
        return figure_bytes(fig, dpi=110)
    finally:
        plt.close(fig)


def arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``geobench mirror-figures``."""
    figure_options(parser, __doc__)


def main(args: argparse.Namespace) -> int:
    """``geobench mirror-figures``: the histogram figure, and the pruning one where stored."""
    stored = read_stored(args)
    name = stored.name
    out = figure_path(args, stored, "neurons")
    means, edges = collect(stored)
    if not means:
        print(f"no finished cells with {KEY} values of {args.suite} [{args.profile}] in "
              f"{args.store}", file=sys.stderr)
        return 1
    n = statistics.fmean(len(v) for v in means.values())
    files = {out: plot(means, edges, f"{name} ({args.profile}): effective neuron weights "
                                     "per arm")}
    curves, percents = collect(stored, PRUNING)
    if curves:
        pruning = out.with_name(out.name.replace("neurons", "pruning"))
        if pruning == out:
            pruning = out.with_name(f"{out.stem}_pruning{out.suffix}")
        files[pruning] = plot(curves, percents, f"{name} ({args.profile}): test accuracy "
                                                 "under magnitude pruning", PRUNING)
    write_files(files)
    print(f"wrote {out} ({len(means)} panels, {n:g} arms each)")
    if curves:
        print(f"wrote {pruning}")
    return 0
