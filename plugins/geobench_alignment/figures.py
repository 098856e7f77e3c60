"""Figures of an alignment suite from the results store: CKA over training per comparison
arm, and final CKA against the class count C', the temperature and the batch size.  CKA is
the debiased linear CKA (``cka.debiased``, the unbiased-HSIC estimator):

    geobench alignment-figures suites/alignment.yaml [--profile smoke]
        [--store results/geobench.sqlite] [--out FOLDER]

writes ``<suite>_cka_training.png``, ``_cka_vs_classes``, ``_cka_vs_tau`` and
``_cka_vs_batch`` (``<suite>_<profile>_...`` for a profile other than smoke) into ``--out``
(default: ``leaderboards/`` beside the store, where ``geobench leaderboard`` writes the
suite's leaderboard).

The suite varies one factor at a time around a reference design point; each factor's
reference value is its most common value over the suite's cells.  A sweep over one factor
keeps every other factor at its reference value (for the batch size: one line per
learning-rate scaling rule, which all coincide at ``base_batch_size``).  Points are means
over seeds with their standard deviation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from geobench.figures import (
    Cell,
    StoredSuite,
    cross_arm,
    figure_bytes,
    figure_folder,
    figure_options,
    get_dotted,
    metric_key,
    read_stored,
    write_files,
)

FACTORS = {
    "dataset": "data.name",
    "classes": "data.classes",
    "tau": "objective.tau",
    "batch": "data.batch_size",
    "scaling": "train.lr_scaling",
}
METRIC = "cka.debiased"
Lines = dict[Any, dict[Any, list[float]]]  # line label -> x -> values over seeds


def factors(cell: Cell) -> dict[str, Any]:
    """The design factors of a cell, read from its first (reference) arm."""
    spec = next(iter(cell.arms.values()))
    return {name: get_dotted(spec, key) for name, key in FACTORS.items()}


def reference_point(cells: list[Cell]) -> dict[str, str]:
    """Each factor's most common value (as ``repr``) over the cells."""
    return {name: Counter(repr(factors(c)[name]) for c in cells).most_common(1)[0][0]
            for name in FACTORS}


def at_reference(cell: Cell, ref: dict[str, str], free: tuple[str, ...] = ()) -> bool:
    """Whether every factor but ``free`` is at its reference value."""
    f = factors(cell)
    return all(repr(f[k]) == ref[k] for k in FACTORS if k not in free)


def pairs(cells: list[Cell]) -> dict[str, str]:
    """Comparison arm -> its cross-arm label ``<reference>~<arm>``."""
    names = list(cells[0].arms)
    return {name: cross_arm(names[0], name) for name in names[1:]}


def curve_points(cells: list[Cell], series: list[tuple], ref: dict[str, str]) -> Lines:
    """CKA over steps per comparison arm at the reference point; ``series`` holds store
    rows ``(cell, arm, metric, step, value)``."""
    ids = {c.id for c in cells if at_reference(c, ref)}
    labels = {label: arm for arm, label in pairs(cells).items()}
    lines: Lines = defaultdict(lambda: defaultdict(list))
    for cell, label, metric, step, value in series:
        if cell in ids and label in labels and metric == METRIC:
            lines[labels[label]][step].append(value)
    return lines


def sweep_points(cells: list[Cell], finals: dict[str, dict[str, float]], ref: dict[str, str],
                 factor: str) -> Lines:
    """Final CKA against ``factor`` per comparison arm, the other factors at reference."""
    lines: Lines = defaultdict(lambda: defaultdict(list))
    for cell in cells:
        if not at_reference(cell, ref, (factor,)):
            continue
        for arm, label in pairs(cells).items():
            value = finals.get(cell.id, {}).get(metric_key(label, METRIC))
            if value is not None:
                lines[arm][factors(cell)[factor]].append(value)
    return lines


def batch_points(cells: list[Cell], finals: dict[str, dict[str, float]], ref: dict[str, str],
                 arm: str) -> Lines:
    """Final CKA(CL, arm) against B, one line per lr-scaling rule; a cell at
    ``base_batch_size`` (where every rule gives the same learning rate) joins every line."""
    chosen = [c for c in cells if at_reference(c, ref, ("batch", "scaling"))]
    rules = {factors(c)["scaling"] for c in chosen}
    label = pairs(cells)[arm]
    lines: Lines = defaultdict(lambda: defaultdict(list))
    for cell in chosen:
        value = finals.get(cell.id, {}).get(metric_key(label, METRIC))
        if value is None:
            continue
        f = factors(cell)
        at_base = f["batch"] == next(iter(cell.arms.values()))["train"]["base_batch_size"]
        for rule in (rules if at_base else {f["scaling"]}):
            lines[f"lr {rule}"][f["batch"]].append(value)
    return lines


def _draw(ax, lines: Lines, xlabel: str, title: str, bars: bool = True) -> None:
    for label, points in sorted(lines.items(), key=lambda kv: str(kv[0])):
        xs = sorted(points)
        means = [statistics.fmean(points[x]) for x in xs]
        stds = [statistics.stdev(points[x]) if len(points[x]) > 1 else 0.0 for x in xs]
        if bars:
            ax.errorbar(xs, means, yerr=stds, marker="o", capsize=3, label=str(label))
        else:
            ax.plot(xs, means, marker=".", label=str(label))
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(f"debiased CKA(CL, arm)  [{METRIC}]")
    ax.grid(alpha=0.3)
    if lines:
        ax.legend(fontsize=8)


def render(stored: StoredSuite, out: Path) -> list[Path]:
    """Write the four figures of the stored suite into the folder ``out``; return their
    paths. Only complete cells count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = stored.cells
    ref = reference_point(cells)
    finals = stored.finals()
    series = [row for row in stored.series if row[0] in finals]
    point = ", ".join(f"{k}={v.strip(chr(39))}" for k, v in ref.items())
    first = next(iter(pairs(cells)))
    figures = {
        "cka_training": (curve_points(cells, series, ref), "step", point, False),
        "cka_vs_classes": (sweep_points(cells, finals, ref, "classes"), "classes C'", point,
                           True),
        "cka_vs_tau": (sweep_points(cells, finals, ref, "tau"), "temperature tau", point, True),
        "cka_vs_batch": (batch_points(cells, finals, ref, first), "batch size B",
                         f"CL vs {first}; {point}", True),
    }
    pngs: dict[Path, bytes] = {}
    for suffix, (lines, xlabel, title, bars) in figures.items():
        fig, ax = plt.subplots(figsize=(6, 4))
        _draw(ax, lines, xlabel, title, bars)
        if suffix in ("cka_vs_classes", "cka_vs_batch"):
            ax.set_xscale("log", base=2)
            xs = sorted({x for points in lines.values() for x in points})
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.minorticks_off()
        fig.tight_layout()
        pngs[out / f"{stored.stem}_{suffix}.png"] = figure_bytes(fig, dpi=110)
        plt.close(fig)
    write_files(pngs)
    return list(pngs)


def arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``geobench alignment-figures``."""
    figure_options(parser, __doc__, "folder of the figures (default: leaderboards/ beside the "
                                    "store)")


def main(args: argparse.Namespace) -> int:
    """``geobench alignment-figures``: write the four figures, print their paths."""
    stored = read_stored(args, [METRIC])
    if not stored.finals():
        print(f"no complete cells of {args.suite} [{args.profile}] in {args.store}",
              file=sys.stderr)
        return 1
    for path in render(stored, args.out or figure_folder(args.store)):
        print(f"wrote {path}")
    return 0
