"""The forest plot: each part on the axis a reader compares (its table text), and on the
shared axis of the plot, in half-widths from the edge its verdict compares with."""

import math
import random

import pytest

from geobench.claims.forest import EDGE, forest_png, forest_points, forest_rows, standardised
from geobench.claims.units import PartUnits, Unit
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict, _verdict
from geobench.suite.schema import Claim


def _claim(expect: str, **kw) -> Claim:
    return Claim(id=kw.pop("id", "c"), statement="s", metric="m.f", expect=expect, **kw)


def test_forest_points_are_on_the_axis_a_reader_compares():
    log = _claim("a > b", scale="log", margin=0.1, compare={"arm": ["a", "b"]})
    v = Verdict(log, math.log(2.0), math.log(1.5), math.log(3.0), 5, 5, 0, 0, "holds")
    assert forest_points(v)[:4] == pytest.approx((2.0, 1.5, 3.0, math.exp(0.1)))
    assert forest_points(v)[4] == "log"
    rate = _claim("< 0.5")
    v = Verdict(rate, -0.5, -0.5, 0.02, 5, 5, 0, 0, "inconclusive", rate=(0.0, 5))
    assert forest_points(v)[:4] == pytest.approx((0.0, 0.0, 0.52, 0.5))
    plain = _claim("< 0", margin=0.2)
    v = Verdict(plain, -1.0, -1.5, -0.5, 5, 5, 0, 0, "holds")
    assert forest_points(v) == (-1.0, -1.5, -0.5, -0.2, "linear")


def test_the_shared_axis_is_the_distance_from_the_edge_in_half_widths():
    # > 0 by 0.1: d = 0.5 [0.3, 0.7], half-width 0.2 -> (0.5 - 0.1) / 0.2 = 2, ends 1 and 3
    greater = Verdict(_claim("> 0", margin=0.1), 0.5, 0.3, 0.7, 5, 5, 0, 0, "holds")
    assert standardised(greater) == pytest.approx((2.0, 1.0, 3.0))
    # < 0 by 0.2: d = -1 [-1.5, -0.5] -> s·d - m = 0.8 [0.3, 1.3], half-width 0.5
    less = Verdict(_claim("< 0", margin=0.2), -1.0, -1.5, -0.5, 5, 5, 0, 0, "holds")
    assert standardised(less) == pytest.approx((1.6, 0.6, 2.6))
    # a rate 0 of 5 against < 0.5: rate - c = -0.5 [-0.5, +0.02] -> 0.5 [-0.02, 0.5] / 0.26
    rate = Verdict(_claim("< 0.5"), -0.5, -0.5, 0.02, 5, 5, 0, 0, "inconclusive",
                   rate=(0.0, 5))
    assert standardised(rate) == pytest.approx((0.5 / 0.26, -0.02 / 0.26, 0.5 / 0.26))


@pytest.mark.parametrize("expect,margin", [("> 0", 0.0), ("> 0", 0.3), ("< 0", 0.0),
                                           ("< 0", 0.2), ("> 1", 0.1)])
def test_the_verdict_reads_off_the_shared_axis(expect, margin):
    """On verdicts the real rule decides (``claims.verdicts``, t intervals over seeds): holds
    exactly when the whole interval is right of 0, fails exactly when it is left of 0."""
    claim = _claim(expect, margin=margin)
    rng = random.Random(7)
    seen = set()
    for _ in range(200):
        centre, spread = rng.uniform(-1.5, 1.5), rng.uniform(0.01, 1.0)
        part_units = PartUnits(claim, None, rate=False)
        part_units.units = [Unit(seed, "c", "", "", None, None, rng.gauss(centre, spread))
                       for seed in range(rng.randint(3, 8))]
        v = _verdict(claim, part_units, "t")
        _, lo, hi = standardised(v)
        assert ("holds" if lo > 0 else "fails" if hi < 0 else "inconclusive") == v.verdict
        seen.add(v.verdict)
    assert seen == {"holds", "fails", "inconclusive"}  # every outcome was exercised


def test_a_zero_width_interval_goes_to_the_edge_and_no_interval_to_none():
    v = Verdict(_claim("> 0.5"), -0.5, -0.5, -0.5, 10, 10, 0, 0, "fails", rate=(0.0, 10))
    assert standardised(v) == (-EDGE, -EDGE, -EDGE)
    v.effect = v.ci_low = v.ci_high = None
    assert standardised(v) is None


def test_rows_group_parts_and_controls_and_list_what_is_not_in_the_profile():
    main = Verdict(_claim("> 0", id="a", posthoc="seen"), 1.0, 0.5, 1.5, 5, 5, 0, 0,
                   "holds", declared="seen")
    main.parts = [Verdict(main.claim, 1.0, 0.5, 1.5, 5, 5, 0, 0, "holds"),
                  Verdict(main.claim, None, None, None, 0, 0, 0, 0, NOT_IN_PROFILE)]
    main.controls = [Verdict(main.claim, 1.0, 0.5, 1.5, 5, 5, 0, 0, "holds")]
    gone = Verdict(_claim("> 0", id="b"), None, None, None, 0, 0, 0, 0, NOT_IN_PROFILE)
    check = Verdict(_claim("> 0", id="s", kind="sanity"), 1.0, 0.5, 1.5, 5, 5, 0, 0, "holds")
    rows, absent = forest_rows([main, gone, check])
    assert [label for _, _, label in rows] == ["a† · part 1", "· control 1"]
    assert absent == ["a · part 2", "b"]
    assert forest_png([main, gone, check], "s")[:8] == b"\x89PNG\r\n\x1a\n"
    assert forest_png([gone, check], "s") is None
