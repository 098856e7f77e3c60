"""The geometry of a claim part's per-seed plot (drawn as SVG by the ``seedplot`` macro):
every unit's d (the tested difference: a - b, log a - log b on a log scale, a - c for a
rate) at its trial seed, the seed's mean d (what enters the interval) as a bar, and the
edge the verdict compares with (±margin, dashed)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 560, 170
LEFT, RIGHT, TOP, BOTTOM = 58, 10, 10, 28


@dataclass
class SeedPlot:
    """Points (x, y, tooltip), seed means (x, y, tooltip), the edge's y, and the axes'
    ticks (position, label); ``width``/``height`` of the picture and where its drawing area
    ends on each side."""

    points: list[tuple[float, float, str]] = field(default_factory=list)
    means: list[tuple[float, float, str]] = field(default_factory=list)
    edge: float = 0.0
    xticks: list[tuple[float, str]] = field(default_factory=list)
    yticks: list[tuple[float, str]] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT  # the y axis
    right: int = WIDTH - RIGHT  # where the drawing ends
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM  # the x axis


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    """About ``count`` round values spanning [low, high]."""
    step = 10 ** math.floor(math.log10((high - low) / count))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= count:
            step *= factor
            break
    first = math.ceil(low / step)
    return [k * step for k in range(first, math.floor(high / step + 1e-9) + 1)]


def seed_plot(units: list[dict[str, str]], edge: float) -> SeedPlot | None:
    """The plot of ``units`` (rows of a claims CSV for one part; those with no d, left out
    or missing, are not drawn) against ``edge``; None when no unit has a finite d."""
    kept = [(int(u["trial_seed"]), float(u["d"])) for u in units
            if u["d"] and not u["excluded"] and math.isfinite(float(u["d"]))]
    if not kept:
        return None
    seeds = sorted({s for s, _ in kept})
    values = [d for _, d in kept] + [edge]
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or max(abs(high), 1.0) * 0.1
    low, high = low - pad, high + pad
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / len(seeds)

    def x(seed: int) -> float:
        return LEFT + slot * (seeds.index(seed) + 0.5)

    def y(d: float) -> float:
        return TOP + inner_h * (high - d) / (high - low)

    plot = SeedPlot(edge=y(edge))
    by_seed: dict[int, list[float]] = {}
    for seed, d in kept:
        by_seed.setdefault(seed, []).append(d)
    for seed, ds in by_seed.items():
        for j, d in enumerate(ds):
            shift = (j - (len(ds) - 1) / 2) * min(6.0, slot * 0.6 / max(len(ds), 1))
            plot.points.append((x(seed) + shift, y(d), f"trial seed {seed}: d = {d:.4g}"))
        mean = sum(ds) / len(ds)
        plot.means.append((x(seed), y(mean), f"trial seed {seed}: mean d = {mean:.4g} "
                                             f"over {len(ds)} unit(s)"))
    every = max(1, math.ceil(len(seeds) / 12))
    plot.xticks = [(x(s), str(s)) for s in seeds[::every]]
    plot.yticks = [(y(t), f"{t:.3g}") for t in _ticks(low, high)]
    return plot
