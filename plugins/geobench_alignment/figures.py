"""Figures of an alignment suite from the results store: CKA over training per comparison
arm, and final CKA against the class count C', the temperature and the batch size.

    python -m geobench_alignment.figures suites/alignment.yaml [--profile smoke]
        [--store results/geobench.sqlite] [--out leaderboards]

The suite varies one factor at a time around a reference design point; each factor's
reference value is its most common value over the suite's cells.  A sweep over one factor
keeps every other factor at its reference value (for the batch size: one line per
learning-rate scaling rule, which all coincide at ``base_batch_size``).  Points are means
over seeds with their standard deviation.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from geobench.plugins import registry
from geobench.store import Store
from geobench.suite import Cell, expand, get_dotted, load_suite

FACTORS = {
    "dataset": "data.name",
    "classes": "data.classes",
    "tau": "objective.tau",
    "batch": "data.batch_size",
    "scaling": "train.lr_scaling",
}
METRIC = "cka.linear"


def factors(cell: Cell) -> dict[str, Any]:
    """The design factors of a cell, read from its first (reference) arm."""
    spec = next(iter(cell.arms.values()))
    return {name: get_dotted(spec, key) for name, key in FACTORS.items()}


def reference_point(cells: list[Cell]) -> dict[str, Any]:
    """Each factor's most common value over the cells."""
    return {name: Counter(repr(factors(c)[name]) for c in cells).most_common(1)[0][0]
            for name in FACTORS}


def _at_reference(cell: Cell, ref: dict[str, Any], free: tuple[str, ...]) -> bool:
    f = factors(cell)
    return all(repr(f[k]) == ref[k] for k in FACTORS if k not in free)


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _pairs(cells: list[Cell]) -> list[tuple[str, str]]:
    names = list(cells[0].arms)
    return [(name, f"{names[0]}~{name}") for name in names[1:]]


def training_curves(ax, cells: list[Cell], store: Store, ref: dict[str, Any]) -> None:
    chosen = [c for c in cells if _at_reference(c, ref, ())]
    rows = store.series([c.id for c in chosen], METRIC)
    for arm, label in _pairs(cells):
        by_step: dict[int, list[float]] = defaultdict(list)
        for _cell, pair, _m, step, value in rows:
            if pair == label:
                by_step[step].append(value)
        steps = sorted(by_step)
        if steps:
            ax.plot(steps, [statistics.fmean(by_step[s]) for s in steps], marker=".", label=arm)
    ax.set_xlabel("step")
    ax.set_title("reference design point")


def sweep(ax, cells: list[Cell], store: Store, ref: dict[str, Any], factor: str) -> None:
    chosen = [c for c in cells if _at_reference(c, ref, (factor,))]
    finals = store.cells([c.id for c in chosen])
    for arm, label in _pairs(cells):
        points: dict[Any, list[float]] = defaultdict(list)
        for c in chosen:
            value = finals.get(c.id, {}).get("metrics", {}).get(f"{label}/{METRIC}")
            if value is not None:
                points[factors(c)[factor]].append(value)
        xs = sorted(points)
        if xs:
            stats = [_mean_std(points[x]) for x in xs]
            ax.errorbar(xs, [m for m, _ in stats], yerr=[s for _, s in stats], marker="o",
                        capsize=3, label=arm)
    ax.set_xlabel(factor)


def batch_sweep(ax, cells: list[Cell], store: Store, ref: dict[str, Any], arm: str) -> None:
    chosen = [c for c in cells if _at_reference(c, ref, ("batch", "scaling"))]
    finals = store.cells([c.id for c in chosen])
    label = dict(_pairs(cells))[arm]
    lines: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in chosen:
        value = finals.get(c.id, {}).get("metrics", {}).get(f"{label}/{METRIC}")
        if value is None:
            continue
        f = factors(c)
        base_b = next(iter(c.arms.values()))["train"]["base_batch_size"]
        rules = {f2["scaling"] for f2 in map(factors, chosen)} if f["batch"] == base_b else {
            f["scaling"]}
        for rule in rules:
            lines[rule][f["batch"]].append(value)
    for rule, points in sorted(lines.items()):
        xs = sorted(points)
        stats = [_mean_std(points[x]) for x in xs]
        ax.errorbar(xs, [m for m, _ in stats], yerr=[s for _, s in stats], marker="o",
                    capsize=3, label=f"lr {rule}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_title(f"CL vs {arm}")


def render(suite_path: str, profile: str, store_path: str, out: Path) -> list[Path]:
    """Write the four figures; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loaded = load_suite(suite_path)
    cells = expand(loaded, registry(), profile)
    ref = reference_point(cells)
    store = Store(store_path)
    out.mkdir(parents=True, exist_ok=True)
    name = loaded.suite.name
    second = _pairs(cells)[0][0]
    panels = [
        ("cka_training", lambda ax: training_curves(ax, cells, store, ref)),
        ("cka_vs_classes", lambda ax: (sweep(ax, cells, store, ref, "classes"),
                                       ax.set_xscale("log"))),
        ("cka_vs_tau", lambda ax: sweep(ax, cells, store, ref, "tau")),
        ("cka_vs_batch", lambda ax: batch_sweep(ax, cells, store, ref, second)),
    ]
    paths = []
    try:
        for suffix, draw in panels:
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            draw(ax)
            ax.set_ylabel(f"CKA(CL, arm) [{METRIC}]")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            path = out / f"{name}_{suffix}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            paths.append(path)
    finally:
        store.close()
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("suite")
    p.add_argument("--profile", default="smoke")
    p.add_argument("--store", default="results/geobench.sqlite")
    p.add_argument("--out", default="leaderboards")
    args = p.parse_args(argv)
    for path in render(args.suite, args.profile, args.store, Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
