"""Means with 95% intervals (geobench.claims.stats): the Student-t interval against
scipy.stats.t by hand, the bootstrap against exact bootstrap distributions and its
properties."""

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from geobench.claims.stats import bootstrap_interval, interval, t_half_width, t_interval


@pytest.mark.parametrize("values", [[1.0, 2.0], [0.3, -1.2, 4.4, 2.0, 0.0],
                                    list(np.linspace(-3, 7, 17))])
@pytest.mark.parametrize("level", [0.95, 0.9, 0.99])
def test_t_interval_by_hand(values, level):
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = student_t.ppf(1 - (1 - level) / 2, df=n - 1) * sd / math.sqrt(n)
    got = t_interval(values, level)
    assert got == pytest.approx((mean, mean - half, mean + half), rel=1e-12, abs=1e-12)
    assert t_half_width(values, level) == pytest.approx(half, rel=1e-12)


def test_t_interval_of_equal_values_and_of_one_value():
    assert t_interval([2.5, 2.5, 2.5]) == (2.5, 2.5, 2.5)
    mean, low, high = t_interval([4.0])
    assert mean == 4.0 and math.isnan(low) and math.isnan(high)
    assert math.isnan(t_half_width([]))


def test_bootstrap_of_two_values_is_the_exact_percentiles():
    # resamples of [0, 1]: mean 0 (p 1/4), 0.5 (p 1/2), 1 (p 1/4): the 2.5% and 97.5%
    # quantiles are 0 and 1 (10000 resamples: a quarter of them at each end)
    assert bootstrap_interval([0.0, 1.0]) == (0.5, 0.0, 1.0)


def test_bootstrap_of_three_values_is_the_exact_percentiles():
    x = [0.0, 1.0, 5.0]
    # the 27 equally likely resamples: mean 0 and mean 5 have probability 1/27 > 2.5% each,
    # so the exact distribution's 2.5% and 97.5% quantiles are 0 and 5
    means = sorted((a + b + c) / 3 for a in x for b in x for c in x)
    cdf = [(i + 1) / 27 for i in range(27)]
    low = next(m for m, p in zip(means, cdf) if p >= 0.025)
    high = next(m for m, p in zip(means, cdf) if p >= 0.975)
    assert (low, high) == (0.0, 5.0)
    assert bootstrap_interval(x) == (2.0, low, high)


def test_bootstrap_properties():
    x = [3.0, -1.0, 4.0, 1.5, 9.0, 2.6]
    mean, low, high = bootstrap_interval(x)
    assert mean == pytest.approx(sum(x) / 6)
    assert min(x) <= low <= mean <= high <= max(x)
    assert bootstrap_interval(x) == (mean, low, high)  # a fixed generator
    assert bootstrap_interval(x, seed=1) != (mean, low, high)
    narrow = bootstrap_interval(x, level=0.5)
    assert low <= narrow[1] <= narrow[2] <= high
    assert bootstrap_interval([7.0] * 4) == (7.0, 7.0, 7.0)
    one = bootstrap_interval([7.0])
    assert one[0] == 7.0 and math.isnan(one[1]) and math.isnan(one[2])


def test_interval_by_method():
    x = [1.0, 2.0, 4.0]
    assert interval(x, "t") == t_interval(x) and interval(x, "bootstrap") == bootstrap_interval(x)
