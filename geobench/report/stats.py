"""Means with 95% confidence intervals over trial seeds (or over pairs of them)."""

from __future__ import annotations

import math
import statistics

import numpy as np
from scipy import stats as sps

LEVEL = 0.95
RESAMPLES = 10_000


def t_half_width(values: list[float], level: float = LEVEL) -> float:
    """Half-width of the Student-t interval of the mean: t_{(1+level)/2, n-1} * s / sqrt(n)
    (NaN for fewer than two values)."""
    n = len(values)
    if n < 2:
        return math.nan
    return float(sps.t.ppf((1 + level) / 2, n - 1)) * statistics.stdev(values) / math.sqrt(n)


def t_interval(values: list[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high): the Student-t interval of the mean."""
    mean = statistics.fmean(values)
    half = t_half_width(values, level)
    return mean, mean - half, mean + half


def bootstrap_interval(values: list[float], level: float = LEVEL, resamples: int = RESAMPLES,
                       seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the percentile bootstrap interval of the mean, from ``resamples``
    resamples with replacement drawn by a fixed generator (the same data give the same
    interval).  NaN bounds for fewer than two values."""
    x = np.asarray(values, dtype=np.float64)
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    rng = np.random.Generator(np.random.PCG64(seed))
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return mean, float(low), float(high)


def interval(values: list[float], method: str) -> tuple[float, float, float]:
    """(mean, low, high) by ``method``: ``t`` or ``bootstrap``."""
    return t_interval(values) if method == "t" else bootstrap_interval(values)
