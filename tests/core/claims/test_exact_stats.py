"""Exact rate intervals, p-values and Holm's correction (geobench.claims.stats) against scipy
and hand computation, and their edge cases: fractional counts, coverage of two runs a seed,
bootstrap intervals and p-values that agree."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from geobench.claims.stats import (
    binomial_p_values,
    bootstrap_interval,
    bootstrap_means,
    bootstrap_p_values,
    clopper_pearson,
    holm,
    t_p_values,
)

# --- the statistics against scipy and hand computation ----------------------------------

@pytest.mark.parametrize("k,n", [(0, 5), (0, 10), (3, 10), (7, 9), (10, 10), (1, 1)])
def test_clopper_pearson_is_scipys_exact_interval(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_zero_of_ten_reaches_point_three_one():
    assert clopper_pearson(0, 10)[1] == pytest.approx(0.3085, abs=1e-4)


@pytest.mark.parametrize("k,n,rate", [(0, 5, 0.5), (5, 5, 0.5), (3, 10, 0.5), (8, 10, 0.6),
                                      (2, 7, 0.1)])
def test_binomial_p_values_are_scipys_exact_tests(k, n, rate):
    above, below = binomial_p_values(k, n, rate)
    assert above == pytest.approx(stats.binomtest(k, n, rate, "greater").pvalue, abs=1e-12)
    assert below == pytest.approx(stats.binomtest(k, n, rate, "less").pvalue, abs=1e-12)


def test_binomial_p_values_by_hand():
    # 0 of 5 against 1/2: P(X <= 0) = 1/32; 5 of 5: P(X >= 5) = 1/32
    assert binomial_p_values(0, 5, 0.5) == (1.0, pytest.approx(1 / 32))
    assert binomial_p_values(5, 5, 0.5) == (pytest.approx(1 / 32), 1.0)
    # 1 of 3 against 1/2: P(X >= 1) = 7/8, P(X <= 1) = 1/2
    assert binomial_p_values(1, 3, 0.5) == (pytest.approx(7 / 8), pytest.approx(1 / 2))


def test_t_p_values_by_hand_and_against_scipy():
    # 3 ± √3/2: mean 3, s = 1, n = 4, s/√n = 0.5; at threshold 3 - 0.5 t₀.₉₇₅,₃ the t statistic
    # is the 97.5% point with 3 df, so the p-values are 0.025 and 0.975
    x = [3 + math.sqrt(3) / 2 * s for s in (1, -1, 1, -1)]
    threshold = 3 - 3.182446305284263 * 0.5
    above, below = t_p_values(x, threshold)
    assert above == pytest.approx(0.025, abs=1e-9) and below == pytest.approx(0.975, abs=1e-9)
    y = [0.3, -0.1, 0.7, 0.4, 0.2]
    for alt, got in zip(("greater", "less"), t_p_values(y, 0.05)):
        assert got == pytest.approx(stats.ttest_1samp(y, 0.05, alternative=alt).pvalue)
    assert t_p_values([2.0, 2.0, 2.0], 1.0) == (0.0, 1.0)  # no spread: decided by the side


def test_holm_by_hand():
    # sorted 0.005 < 0.05/4, 0.01 < 0.05/3, then 0.03 >= 0.05/2 stops: 0.04 is not rejected
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert holm([0.02, 0.024]) == [True, True]  # 0.02 < 0.025, then 0.024 < 0.05
    assert holm([]) == []


# --- edge cases of rates and intervals ---------------------------------------------------

def test_a_fractional_count_lies_between_its_neighbours():
    low, high = clopper_pearson(4.5, 6)
    assert clopper_pearson(4, 6)[0] < low < clopper_pearson(5, 6)[0]
    assert clopper_pearson(4, 6)[1] < high < clopper_pearson(5, 6)[1]


@pytest.mark.parametrize("p", [0.05, 0.2, 0.4, 0.5, 0.7, 0.9])
def test_rates_of_two_runs_per_seed_keep_95_percent_coverage(p):
    """Exact coverage, by enumeration, when each of 5 trial seeds has two runs (seed rate 0,
    0.5 or 1, binomially): the interval on the summed seed rates still covers p."""
    probs = {0.0: (1 - p) ** 2, 0.5: 2 * p * (1 - p), 1.0: p ** 2}
    cover = 0.0
    for rates in itertools.product(probs, repeat=5):
        low, high = clopper_pearson(sum(rates), 5)
        if low <= p <= high:
            cover += math.prod(probs[r] for r in rates)
    assert cover >= 0.95


def test_bootstrap_interval_and_p_values_agree_at_every_threshold():
    x = [0.3, -0.1, 0.7, 0.4, 0.2]
    means = np.sort(bootstrap_means(np.asarray(x)))
    _, low, high = bootstrap_interval(x)
    for edge in np.unique(means)[200:300]:  # thresholds around the lower bound
        share_le, _ = bootstrap_p_values(x, float(edge))
        assert (low > edge) == (share_le < 0.025), edge
    for edge in np.unique(means)[-300:-200]:
        _, share_ge = bootstrap_p_values(x, float(edge))
        assert (high < edge) == (share_ge < 0.025), edge
