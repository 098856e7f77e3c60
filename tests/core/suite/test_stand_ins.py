"""A suite expanded through stand-ins for a plugin's components (``suite.stand_ins``): the
cells the store holds keep the ids, records and versions they were stored under, a cell the
store lacks gets an id no stored cell has, and a command that runs cells is told which
plugin the store says provided the component."""

import pytest

from geobench.contract.manager import registry
from geobench.contract.registry import Registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.expand import cell_id
from geobench.suite.stand_ins import StoredRegistry, with_absent, with_stand_ins
from geobench.suite.yamlio import SuiteError

# two arms (one leaves the backbone's width to its default), a grid point that leaves the
# activation to its default (whose given values agree with the other point's stored cells
# too) beside one that sets it, two instances of one metric
SUITE = """\
name: standins
base:
  data: {name: toy_mixture, n_train: 64, n_test: 32, batch_size: 32}
  augment: {name: toy_none}
  backbone: {name: toy_mlp}
  objective: {name: toy_ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 4, device: cpu}
  metrics:
    - {name: toy_event}
    - {name: toy_event, id: late, threshold: 5.0}
arms:
  wide: {backbone: {width: 32}}
  plain: {}
grid:
  backbone: [{name: toy_mlp}, {name: toy_mlp, activation: tanh}]
zip:
  - {optimizer: [{name: sgd, lr: 0.1}, {name: sgd, lr: 0.1, momentum: 0.5}]}
seeds: 2
profiles:
  mid: {seeds: 3}
"""
TOY = "toy (geobench)"  # the toy plugin is one of the core's built-ins in these tests


@pytest.fixture
def suite(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE)
    loaded = load_suite(tmp_path / "s.yaml")
    return loaded, Study(loaded, registry())


def _without_toy() -> Registry:
    """The registry as it is without the toy plugin."""
    return Registry({kind: {name: e for name, e in entries.items() if e.origin != TOY}
                     for kind, entries in registry().entries.items()})


def _stored(cells, finished=1.0):
    """What a store holding ``cells`` records of them (``Store.write``: ``cell.config()``)."""
    return [(c.id, c.config(), finished) for c in cells]


def test_stored_cells_keep_their_ids_records_and_versions(suite):
    loaded, study = suite
    cells = [c for profile in study.profiles.values() for c in profile]
    assert len(cells) == 2 * 2 * (2 + 3)
    plain = next(c for c in cells if c.varied["optimizer"] == {"name": "sgd", "lr": 0.1})
    assert plain.arms["plain"]["backbone"]["width"] == 16  # the plugin's default
    assert plain.arms["plain"]["optimizer"]["momentum"] == 0.0
    assert {c.arms["plain"]["backbone"]["activation"] for c in cells} == {"tanh", "relu"}
    assert plain.versions[TOY]

    stood = with_stand_ins(_without_toy(), _stored(cells)[::-1])  # the tanh cells first
    assert isinstance(stood, StoredRegistry)
    read = Study(loaded, stood)
    for name, profile in study.profiles.items():
        assert [(c.id, c.arms, c.versions, c.varied) for c in read.profiles[name]] == \
            [(c.id, c.arms, c.versions, c.varied) for c in profile]
    assert {name for _, name in stood.used} == {"toy_mixture", "toy_none", "toy_mlp", "toy_ce",
                                                "toy_event"}
    assert set(stood.missing()) == {TOY}
    doc = stood.get("metrics", "toy_event").field_doc("step")
    assert doc is not None and doc.direction == "diagnostic" and TOY in doc.description


def test_a_cell_the_store_lacks_reads_as_missing(suite):
    loaded, study = suite
    cells = study.cells
    read = Study(loaded, with_stand_ins(_without_toy(), _stored(cells[1:])))
    assert [c.id for c in read.cells[1:]] == [c.id for c in cells[1:]]
    assert read.cells[0].id not in {c.id for c in cells}
    assert read.cells[0].arms["wide"]["backbone"] == {"name": "toy_mlp", "width": 32}


def test_a_record_that_does_not_hash_to_its_id_is_not_read(suite):
    loaded, study = suite
    stored = _stored(study.cells)
    cid, config, finished = stored[0]
    stored[0] = (cid, {**config, "versions": {**config["versions"], TOY: "0.0-edited"}},
                 finished)
    read = Study(loaded, with_stand_ins(_without_toy(), stored))
    assert read.cells[0].id != cid and [c.id for c in read.cells[1:]] == \
        [c.id for c in study.cells[1:]]


def test_without_stored_cells_the_component_is_refused(suite):
    loaded, study = suite
    without = _without_toy()
    assert with_stand_ins(without, []) is without
    with pytest.raises(SuiteError, match="'toy_mixture' is not a registered dataset"):
        Study(loaded, without)
    with pytest.raises(SuiteError) as refused:
        Study(loaded, with_absent(_without_toy(), _stored(study.cells)))
    version = study.cells[0].versions[TOY]
    assert str(refused.value).splitlines()[0].endswith(
        f"'toy_mixture' is not a registered dataset; registered: none; the store's cells "
        f"used it from {TOY} {version}, which is not loaded")


def test_of_two_versions_of_the_plugin_the_cell_finished_last_is_read(suite):
    loaded, study = suite
    first = study.cells[0]
    config = {**first.config(), "versions": {**first.versions, TOY: "9.9"}}
    payload = {k: config[k] for k in ("suite", "profile", "trial_seed", "arms", "versions")}
    later = (cell_id(payload), config, 2.0)
    read = Study(loaded, with_stand_ins(_without_toy(), _stored(study.cells) + [later]))
    assert (read.cells[0].id, read.cells[0].versions[TOY]) == (later[0], "9.9")
    assert [c.id for c in read.cells[1:]] == [c.id for c in study.cells[1:]]
