"""Faceted series figures of a suite's stored runs: one panel per facet value, one line per
arm (mean over seeds), for metrics whose values span orders of magnitude:

    geobench projection-figures suites/collapse.yaml \\
        --key hessian_tracking.K_lambda_min --facet head.norm --facet tags.regime \\
        --facet tags.start --yscale symlog [--out leaderboards]

Facet and line keys are dotted config keys, as in a leaderboard's ``rows`` (``arm`` for the
arm).  ``symlog`` is linear within ``--linthresh`` of 0 and logarithmic beyond, so signs stay
visible across scales. The figure is ``<suite>[_<profile>]_<metric>_<field>.png`` in the
``--out`` folder (default: ``leaderboards/`` beside the store); an ``--out`` ending in
``.png`` names it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from geobench.figures import (
    SINGLE_ARM,
    Cell,
    SeriesRow,
    figure_bytes,
    figure_options,
    figure_path,
    get_dotted,
    read_stored,
    write_files,
)


def _value(cell: Cell, arm: str, key: str) -> object:
    if key == "arm":
        return arm
    if key in cell.varied:
        return cell.varied[key]
    return get_dotted(cell.arms.get(arm) or next(iter(cell.arms.values())), key)


def collect(cells: list[Cell], series: list[SeriesRow], key: str, facets: list[str],
            line: str) -> dict[tuple, dict[object, dict[int, list[float]]]]:
    """facet values -> line value -> step -> values over seeds, of the series ``key``;
    ``series`` holds stored rows ``(cell, arm, metric, step, value)``."""
    by_id = {c.id: c for c in cells}
    out: dict[tuple, dict[object, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for cell_id, arm, metric, step, value in series:
        if metric != key or cell_id not in by_id:
            continue
        cell = by_id[cell_id]
        arm_name = arm if arm != SINGLE_ARM else next(iter(cell.arms))
        facet = tuple(_value(cell, arm_name, f) for f in facets)
        out[facet][_value(cell, arm_name, line)][step].append(value)
    return out


def plot(curves: dict, key: str, facets: list[str], out: Path, yscale: str,
         linthresh: float, title: str) -> None:
    """One panel per facet (a grid of at most 4 columns), lines labelled by their value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted(curves, key=str)
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False,
                             sharex=True)
    for ax, facet in zip(axes.flat, panels):
        for label, points in sorted(curves[facet].items(), key=lambda kv: str(kv[0])):
            steps = sorted(points)
            ax.plot(steps, [statistics.fmean(points[s]) for s in steps], label=str(label),
                    lw=1.4, marker=".", ms=3)
        if yscale == "symlog":
            ax.set_yscale("symlog", linthresh=linthresh)
        else:
            ax.set_yscale(yscale)
        ax.set_title(", ".join(f"{f.split('.')[-1]}={v}" for f, v in zip(facets, facet)),
                     fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{title}: {key} (mean over seeds)", fontsize=10)
    fig.supxlabel("step", fontsize=9)
    fig.tight_layout()
    write_files({out: figure_bytes(fig, dpi=110)})
    plt.close(fig)


def arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``geobench projection-figures``."""
    figure_options(parser, __doc__)
    parser.add_argument("--key", required=True, help="<metric>.<field> series to plot")
    parser.add_argument("--facet", action="append", default=[], help="config key per panel")
    parser.add_argument("--line", default="arm", help="config key per line (default: arm)")
    parser.add_argument("--yscale", default="linear", choices=["linear", "log", "symlog"])
    parser.add_argument("--linthresh", type=float, default=1e-4, help="symlog linear range")


def main(args: argparse.Namespace) -> int:
    """``geobench projection-figures``: draw the series ``--key`` of the stored cells."""
    stored = read_stored(args, [args.key])
    curves = collect(stored.cells, stored.series, args.key, args.facet, args.line)
    if not curves:
        print(f"no stored series {args.key!r} for {args.suite} in {args.store}",
              file=sys.stderr)
        return 1
    out = figure_path(args, stored, args.key.replace(".", "_"))
    plot(curves, args.key, args.facet, out, args.yscale, args.linthresh, stored.name)
    print(f"wrote {out}")
    return 0
