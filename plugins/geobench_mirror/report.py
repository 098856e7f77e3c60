"""Histogram of effective neuron weights per arm, from a suite's stored results.

    python -m geobench_mirror.report suites/mirror_flow.yaml \\
        [--profile smoke] [--store results/geobench.sqlite] [--out leaderboards/<suite>_neurons.png]

Reads the final ``neuron_histogram.bin_<i>`` values of every finished cell, averages them
over seeds, and draws one panel per combination of the varied settings (seed excluded),
one line per arm.  The bin edges are those of the ``neuron_histogram`` metric in the suite.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from geobench.plugins import registry
from geobench.records import metric_key
from geobench.store import Store
from geobench.suite import expand, load_suite
from geobench_mirror.neurons import HistogramParams

KEY = "neuron_histogram"


def _edges(cell_arms: dict) -> np.ndarray:
    spec = next(m for m in next(iter(cell_arms.values()))["metrics"] if m["name"] == KEY)
    params = HistogramParams.model_validate({k: v for k, v in spec.items()
                                             if k not in ("name", "id")})
    return np.logspace(np.log10(params.low), 0.0, params.bins + 1)


def collect(suite_path: str, profile: str, store_path: str):
    """{panel label: {arm: mean bin fractions}} and the bin edges."""
    cells = expand(load_suite(suite_path), registry(), profile)
    stored = Store(store_path).cells([c.id for c in cells])
    values: dict[str, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    edges = None
    for cell in cells:
        row = stored.get(cell.id)
        if row is None or row["status"] != "complete":
            continue
        edges = _edges(cell.arms) if edges is None else edges
        panel = ", ".join(f"{k}={v}" for k, v in cell.varied.items()
                          if k != "trial_seed") or "all cells"
        for arm in cell.arms:
            bins = [row["metrics"].get(metric_key(arm, f"{KEY}.bin_{i}"))
                    for i in range(len(edges) - 1)]
            if None not in bins:
                values[panel][arm].append(np.array(bins))
    means = {panel: {arm: np.mean(v, axis=0) for arm, v in arms.items()}
             for panel, arms in values.items()}
    return means, edges


def plot(means: dict, edges: np.ndarray, title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted(means)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False,
                             sharey=True)
    for ax, panel in zip(axes[0], panels, strict=True):
        for arm, fractions in means[panel].items():
            ax.stairs(fractions, edges, label=arm, lw=1.6)
        ax.set_xscale("log")
        ax.set_xlabel("effective weight / layer max  (bin 0 includes all below)")
        ax.set_title(panel, fontsize=9)
    axes[0][0].set_ylabel("fraction of hidden units (mean over seeds)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m geobench_mirror.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--store", default="results/geobench.sqlite")
    ap.add_argument("--out", help="PNG path (default leaderboards/<suite>_neurons.png)")
    args = ap.parse_args(argv)
    name = load_suite(args.suite).suite.name
    out = Path(args.out or f"leaderboards/{name}_neurons.png")
    means, edges = collect(args.suite, args.profile, args.store)
    if not means:
        print(f"no finished cells with {KEY} values in {args.store}")
        return 1
    n = statistics.fmean(len(v) for v in means.values())
    plot(means, edges, f"{name} ({args.profile}): effective neuron weights per arm", out)
    print(f"wrote {out} ({len(means)} panels, {n:g} arms each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
