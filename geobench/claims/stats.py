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
    interval).  The bounds are resampled means themselves (the lower and higher order
    statistic at the two quantiles), so a bound lies beyond a threshold exactly when fewer
    than (1 − level)/2 of the means reach it: the interval and ``bootstrap_p_values`` agree.
    NaN bounds for fewer than two values."""
    x = np.asarray(values, dtype=np.float64)
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    means = bootstrap_means(x, resamples, seed)
    low = np.quantile(means, (1 - level) / 2, method="lower")
    high = np.quantile(means, (1 + level) / 2, method="higher")
    return mean, float(low), float(high)


def bootstrap_means(x: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """The means of ``resamples`` resamples of ``x`` with replacement, drawn by a generator
    seeded with ``seed`` (the same data give the same means)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)


def interval(values: list[float], method: str) -> tuple[float, float, float]:
    """(mean, low, high) by ``method``: ``t`` or ``bootstrap``."""
    return t_interval(values) if method == "t" else bootstrap_interval(values)


ALPHA = 1 - LEVEL


def t_p_values(values: list[float], threshold: float) -> tuple[float, float]:
    """One-sided p-values of the Student-t test of the mean against ``threshold``:
    (p of H0 mean ≤ threshold, p of H0 mean ≥ threshold) = (sf(t), cdf(t)) with
    t = (mean − threshold) / (s / √n), n − 1 degrees of freedom.  A zero spread gives 0 or
    1 by the side the mean lies on (1 and 1 when it equals the threshold)."""
    x = np.asarray(values, dtype=np.float64)
    diff = float(x.mean()) - threshold
    s = float(x.std(ddof=1)) if len(x) > 1 else math.nan
    if not s > 0:
        return (0.0 if diff > 0 else 1.0), (0.0 if diff < 0 else 1.0)
    t = diff / (s / math.sqrt(len(x)))
    return float(sps.t.sf(t, len(x) - 1)), float(sps.t.cdf(t, len(x) - 1))


def bootstrap_p_values(values: list[float], threshold: float, resamples: int = RESAMPLES,
                       seed: int = 0) -> tuple[float, float]:
    """One-sided bootstrap p-values against ``threshold``: the shares of resampled means at
    or below it and at or above it (the resamples of ``bootstrap_interval``)."""
    means = bootstrap_means(np.asarray(values, dtype=np.float64), resamples, seed)
    return float(np.mean(means <= threshold)), float(np.mean(means >= threshold))


def clopper_pearson(k: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The Clopper–Pearson interval of a rate from ``k`` successes in ``n`` trials:
    (Beta_{α/2}(k, n − k + 1), Beta_{1−α/2}(k + 1, n − k)), 0 at k = 0 and 1 at k = n.
    A fractional ``k`` (a sum of per-seed rates) enters the beta quantiles as is."""
    alpha = 1 - level
    low = 0.0 if k <= 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k >= n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def binomial_p_values(k: float, n: int, rate: float) -> tuple[float, float]:
    """Exact one-sided binomial p-values of ``k`` successes in ``n`` trials against the rate
    ``rate``: (P(X ≥ k), P(X ≤ k)) for X ~ Binomial(n, rate) — the tests the
    Clopper–Pearson interval inverts, as regularised incomplete beta functions so that a
    fractional ``k`` is taken as is."""
    rate = min(max(rate, 0.0), 1.0)
    above = 1.0 if k <= 0 else float(sps.beta.cdf(rate, k, n - k + 1))
    below = 1.0 if k >= n else float(sps.beta.sf(rate, k + 1, n - k))
    return above, below


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm–Bonferroni step-down at family-wise level ``alpha``: with the p-values sorted
    ascending, reject the i-th (1-based) of m while every p so far is < alpha / (m − i + 1);
    True where rejected, in the input order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, i in enumerate(order):
        if not p_values[i] < alpha / (len(p_values) - rank):
            break
        rejected[i] = True
    return rejected


def trend_fit(x: list[float], y: list[float], fit: str) -> float:
    """The trend of ``y`` against ``x``: the least-squares slope
    Σ(x − x̄)(y − ȳ) / Σ(x − x̄)² (``fit: slope``) or Spearman's rank correlation, the
    Pearson correlation of the ranks with average ranks for ties (``fit: spearman``; an
    infinite y, a censored time, ranks above every finite one); NaN when x (or, for ρ, y)
    is constant."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if fit == "spearman":
        rx, ry = sps.rankdata(xs), sps.rankdata(ys)
        if np.ptp(rx) == 0 or np.ptp(ry) == 0:
            return math.nan
        return float(np.corrcoef(rx, ry)[0, 1])
    dx = xs - xs.mean()
    sxx = float(dx @ dx)
    return float(dx @ (ys - ys.mean())) / sxx if sxx > 0 else math.nan
