"""A study's selection (``--only``, ``--set``) narrows its own profile only: the verdicts a
page publishes read the other profiles as the file declares them, and ``--beside`` sees the
other profile under the same selection."""

from geobench.claims.values import StoredValues
from geobench.claims.verdicts import evaluate
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: narrow\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.1]
seeds: 5
profiles:
  wide: {grid: {optimizer.lr: [0.2, 0.4]}}
claims:
  - {id: c, statement: s, metric: nccc.accuracy, expect: "> 0.5"}
"""
VALUE = {0.05: 0.6, 0.1: 0.7, 0.2: 0.3, 0.4: 0.2}  # holds at smoke, fails at wide
NOISE = [0.01, -0.02, 0.03, 0.0, -0.01]


def _stored(tmp_path) -> tuple[Study, Store]:
    (tmp_path / "s.yaml").write_text(SUITE)
    study = Study.open(tmp_path / "s.yaml", only={"optimizer.lr": [0.05]})
    store = Store(tmp_path / "db.sqlite")
    for profile in study.profiles.values():
        for cell in profile:
            v = VALUE[cell.varied["optimizer.lr"]] + NOISE[cell.trial_seed % 5]
            store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                         series=[("main", "nccc.accuracy", 30, v)]), {})
    return study, store


def test_only_narrows_the_profile_and_the_other_scales_read_every_declared_cell(tmp_path):
    study, store = _stored(tmp_path)
    assert {c.varied["optimizer.lr"] for c in study.cells} == {0.05}
    verdicts, family = study.published_verdicts(store)  # wide takes no lr 0.05: no error
    assert family is None and len(verdicts[0].units) == 5
    wide = study.profiles["wide"]  # by hand: every declared cell of wide
    expected = evaluate(study.loaded, wide, StoredValues(store, wide), registry())
    assert len(expected[0].units) == 10
    assert verdicts[0].scales == {"wide": expected[0].verdict} == {"wide": "fails"}
    store.close()


def test_beside_keeps_the_selection_and_each_profile_drops_it(tmp_path):
    study, store = _stored(tmp_path)
    steps = Study(study.loaded, registry(), overrides={"train.steps": 5})
    wide = Study(study.loaded, registry(), "wide", overrides={"train.steps": 5})
    assert [c.id for c in steps.at("wide").cells] == [c.id for c in wide.cells]
    assert {c.id for c in wide.cells}.isdisjoint(c.id for c in study.profiles["wide"])
    assert [s.cells for s in steps.each_profile()] == list(study.profiles.values())
    store.close()
