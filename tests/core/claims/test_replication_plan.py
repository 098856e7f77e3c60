"""The replication plan (``claims.replication``) against simulation: fresh seed sets drawn
from the exploration effect, each decided by the interval the verdicts use."""

import statistics

import numpy as np
import pytest

from geobench.claims.replication import TARGET, claim_power, decides, plan
from geobench.claims.stats import clopper_pearson, t_interval
from geobench.claims.units import Unit
from geobench.claims.verdicts import Verdict
from geobench.suite.schema import Claim

SETS = 8_000


def _verdict(expect: str, values: list[float], ci: str = "t", margin: float = 0.0
             ) -> Verdict:
    claim = Claim.model_validate({"id": "c", "statement": "s", "metric": "m.f",
                                  "expect": expect, "margin": margin})
    c = claim.threshold  # a one-sample unit's d is a − c
    units = [Unit(seed, f"cell{seed}", "", "", a, c, a - c) for seed, a in enumerate(values)]
    return Verdict(claim, None, None, None, len(values), len(values), 0, 0, "holds", ci,
                   units=units)


def _exactly(mean: float, sd: float, n: int) -> list[float]:
    """n values whose sample mean and standard deviation are exactly ``mean`` and ``sd``."""
    z = np.random.default_rng(7).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return list(mean + sd * z)


@pytest.mark.parametrize("mean,sd,n,expect,margin", [
    (0.30, 0.20, 5, "> 0.1", 0.0), (0.30, 0.20, 12, "> 0.1", 0.05),
    (-0.5, 0.6, 8, "< 0", 0.0), (0.05, 0.3, 10, "> 0", 0.0)])
def test_a_t_part_decides_as_often_as_simulated_sets_do(mean, sd, n, expect, margin):
    part = _verdict(expect, _exactly(mean, sd, 6), margin=margin)
    holds, p = decides(part, n)
    rng = np.random.default_rng(11)
    threshold = float(expect.split()[1])
    greater = expect.startswith(">")
    hits = 0
    for _ in range(SETS):
        _, low, high = t_interval(list(rng.normal(mean, sd, n)))
        if greater:
            hits += (low > threshold + margin) if holds else (high < threshold + margin)
        else:
            hits += (high < threshold - margin) if holds else (low > threshold - margin)
    assert holds == (mean - threshold > margin if greater else threshold - mean > margin)
    assert p == pytest.approx(hits / SETS, abs=0.02)


@pytest.mark.parametrize("rate,n,expect", [(0.9, 12, "> 0.5"), (0.7, 20, "> 0.5"),
                                           (0.1, 15, "< 0.5"), (0.3, 30, "> 0.5")])
def test_a_rate_part_decides_as_often_as_simulated_sets_do(rate, n, expect):
    k = round(rate * 10)
    part = _verdict(expect, [1.0] * k + [0.0] * (10 - k), ci="rate")
    holds, p = decides(part, n)
    c = float(expect.split()[1])
    rng = np.random.default_rng(3)
    hits = 0
    for successes in rng.binomial(n, rate, SETS):
        low, high = clopper_pearson(float(successes), n)
        above = low > c if (rate > c) else high < c
        hits += above
    assert holds == ((rate > c) == expect.startswith(">"))
    assert p == pytest.approx(hits / SETS, abs=0.02)


def test_a_conjunction_holds_with_every_part_and_fails_with_any():
    strong = _verdict("> 0", _exactly(1.0, 0.5, 5))
    weak = _verdict("> 0", _exactly(0.3, 0.5, 5))
    wrong = _verdict("> 0", _exactly(-0.3, 0.5, 5))
    both = _verdict("> 0", _exactly(1.0, 0.5, 5))
    both.parts = [strong, weak]
    assert claim_power(both, 8) == ("holds", pytest.approx(decides(strong, 8)[1]
                                                           * decides(weak, 8)[1]))
    both.parts = [strong, wrong]
    assert claim_power(both, 8) == ("fails", pytest.approx(decides(wrong, 8)[1]))


def test_the_seeds_needed_are_the_fewest_that_reach_the_target():
    v = _verdict("> 0", _exactly(0.4, 0.5, 5))
    found = plan(v, 5)
    assert found.expected == "holds" and found.replicates == pytest.approx(
        decides(v, 5)[1] ** 2)
    assert decides(v, found.needed)[1] ** 2 >= TARGET > decides(v, found.needed - 1)[1] ** 2
    assert plan(_verdict("> 0", _exactly(0.0001, 0.5, 5)), 5).needed is None
    assert statistics.fmean(_exactly(0.4, 0.5, 5)) == pytest.approx(0.4)
