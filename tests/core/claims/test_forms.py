"""Claim forms (geobench.claims.forms): which form reads a part, what the claims table says
of it, and when one profile's cells can decide it."""

import pytest

from geobench.claims.forms import FORMS, form_of
from geobench.claims.forms.arms import Arms
from geobench.claims.forms.one_sample import OneSample
from geobench.claims.forms.pairs import Pairs
from geobench.claims.forms.series_stats import SeriesStats
from geobench.claims.forms.trend import Trend
from geobench.records import Cell
from geobench.suite.schema import Claim, Suite

BASE = {"id": "c", "statement": "s", "metric": "m.f"}
CASES = [  # (claim fields, form, what the claims table adds after "`m.f` <expect>")
    ({"expect": "> 0"}, OneSample, ""),
    ({"expect": "a > b", "compare": {"key": "optimizer.lr", "a": 0.1, "b": 0.01}}, Pairs,
     " (optimizer.lr: a=0.1, b=0.01)"),
    ({"expect": "a < b", "compare": {"arm": ["x", "y"]}}, Arms, " (a=x, b=y)"),
    ({"expect": "a > b", "compare": {"stat": ["last", "first"]}}, SeriesStats,
     " (a=last, b=first)"),
    ({"expect": "> 0", "trend": {"key": "data.classes", "x": "log"}, "scale": "log"}, Trend,
     " (slope of log y on log data.classes)"),
    ({"expect": "< 0", "trend": {"key": "tags.n", "fit": "spearman"},
      "compare": {"arm": ["x", "y"]}}, Trend, " (a=x, b=y) (spearman of y on tags.n)"),
]


@pytest.mark.parametrize(("fields", "form", "text"), CASES)
def test_each_part_is_read_by_one_form_which_names_it(fields, form, text):
    part = Claim(**BASE, **fields)
    assert isinstance(form_of(part), form)
    assert [type(f) for f in FORMS if f.applies(part)][0] is form
    assert form_of(part).describe(part) == text


def cell(ident: str, seed: int, **varied) -> Cell:
    return Cell(ident, "s", "smoke", seed, {"main": {}}, {**varied, "trial_seed": seed}, {})


def chosen(cells: list[Cell]) -> dict:
    return {c.id: (c, [None]) for c in cells}


def test_a_profile_decides_a_part_only_with_its_units():
    suite = Suite(name="s", base={})
    pairs = Claim(**BASE, **CASES[1][0])
    full = [cell(f"{lr}-{s}", s, **{"optimizer.lr": lr}) for lr in (0.1, 0.01) for s in (0, 1)]
    assert Pairs().decidable(suite, pairs, chosen(full))
    assert not Pairs().decidable(suite, pairs, chosen(full[:2]))  # lr 0.1 only: no pair
    trend = Claim(**BASE, expect="> 0", trend={"key": "tags.n"})
    points = [cell(f"{n}", 0, **{"tags.n": n}) for n in (1, 2, 4)]
    assert Trend().decidable(suite, trend, chosen(points))
    assert not Trend().decidable(suite, trend, chosen(points[:2]))  # 2 values: no fit
    one = Claim(**BASE, expect="> 0")
    assert OneSample().decidable(suite, one, chosen(points[:1]))
    assert not OneSample().decidable(suite, one, {})
    assert OneSample().undecidable("c", one) == ("where",
                                                 "claim 'c' selects no cell in any profile")
    assert Trend().undecidable("c", trend)[0] == "trend"
    assert Pairs().undecidable("c", pairs)[0] == "compare"
