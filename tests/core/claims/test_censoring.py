"""Censored outcomes: on a time-to-event field a run that never reached the event counts
as censored at its budget, and Spearman's ρ ranks it above every observed time (a
hand-computed case); every other test of such a field is refused."""

import math

import pytest
from scipy import stats

from geobench.claims.registration import claim_digests
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import evaluate
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: events\n" + CLAIMS_BASE + """\
  metrics: [{name: toy_event, every: 10}]
grid:
  optimizer.lr: [0.05, 0.1, 0.2]
seeds: 4
claims:
CLAIM
"""
RANK = '  - {id: later, statement: s, metric: toy_event.step, expect: "> 0", ' \
       'trend: {key: optimizer.lr, fit: spearman}}\n'
NAN = math.nan


def _verdict(tmp_path, steps: dict[tuple[int, float], float]):
    """The claim's verdict with ``steps[(seed, lr)]`` stored (NaN: never happened)."""
    (tmp_path / "e.yaml").write_text(SUITE.replace("CLAIM", RANK))
    loaded = load_suite(tmp_path / "e.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:
        v = steps[(cell.trial_seed, cell.varied["optimizer.lr"])]
        store.write(cell, CellResult(cell.id, "complete", finals={"toy_event.step": v},
                                     series=[("main", "toy_event.step", 30, v)],
                                     claims=claim_digests(loaded.suite)), {})
    return evaluate(loaded, cells, StoredValues(store, cells), registry())[0]


def test_runs_that_never_reach_the_event_rank_last_not_dropped(tmp_path):
    # seeds 1-3: 10, 20, never; seed 0: 10, never, never (budget 30 steps)
    steps = {(s, lr): t for s in range(4) for lr, t in ((0.05, 10.0), (0.1, 20.0), (0.2, NAN))}
    steps[(0, 0.1)] = NAN
    v = _verdict(tmp_path, steps)
    # seed 0: ranks x 1 2 3, y 1 2.5 2.5: rho = 0.866...; the others: rho = 1
    rho0 = stats.spearmanr([1, 2, 3], [1, 2.5, 2.5]).statistic
    assert [u.a for u in v.units] == pytest.approx([rho0, 1.0, 1.0, 1.0])
    d = [rho0, 1.0, 1.0, 1.0]
    assert v.p_value == pytest.approx(2 * stats.ttest_1samp(d, 0, alternative="greater").pvalue)
    assert v.verdict == "holds" and v.excluded == 0
    # dropping the censored runs would have left seed 0 one point and lost it


def test_a_budget_below_an_observed_time_leaves_the_unit_out(tmp_path):
    steps = {(s, lr): t for s in range(4) for lr, t in ((0.05, 10.0), (0.1, 20.0), (0.2, NAN))}
    steps[(3, 0.1)] = 40.0  # observed after the 30-step budget of the censored run
    v = _verdict(tmp_path, steps)
    assert v.n == 3 and v.units[3].excluded == ("censored at a budget below an observed "
                                                "time: the ranks are unknown")


@pytest.mark.parametrize("claim", [
    '  - {id: c, statement: s, metric: toy_event.step, expect: "> 0", '
    'trend: {key: optimizer.lr}}\n',
    '  - {id: c, statement: s, metric: toy_event.step, expect: "< 25"}\n',
    '  - {id: c, statement: s, metric: toy_event.step, expect: "a > b", '
    'compare: {key: optimizer.lr, a: 0.2, b: 0.05}}\n'])
def test_any_other_test_of_a_time_to_an_event_is_refused(tmp_path, claim):
    (tmp_path / "e.yaml").write_text(SUITE.replace("CLAIM", claim))
    with pytest.raises(SuiteError, match=r"claims\[0\].metric: claim 'c' tests toy_event.step, "
                                         r"a time to an event .* only a Spearman trend"):
        Study(load_suite(tmp_path / "e.yaml"), registry())


def test_the_toy_event_is_measured_for_real(tmp_path):
    """The toy metric runs in a real cell: a threshold of 0 is reached at the first
    evaluation, an unreachable one never (NaN, to be read as censored)."""
    from geobench.train.engine import run_cell

    text = SUITE.replace("CLAIM", RANK).replace("seeds: 4", "seeds: 3")
    for threshold, expect in ((0.0, 0.0), (1e9, None)):
        (tmp_path / "e.yaml").write_text(text.replace(
            "{name: toy_event, every: 10}", f"{{name: toy_event, every: 10, threshold: "
                                            f"{threshold}}}"))
        cell = Study(load_suite(tmp_path / "e.yaml"), registry()).cells[0]
        got = run_cell(cell).finals["toy_event.step"]
        assert got == expect if expect is not None else math.isnan(got)
