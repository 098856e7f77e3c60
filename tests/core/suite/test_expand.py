"""Expansion (geobench.suite.expand): grid x zip x seeds less the excluded cells, profiles,
--set overrides, the cell limit, and cell ids (sha256 of the canonical JSON, 16 hex digits)."""

import hashlib
import itertools
import json

import pytest

from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import cell_id, load_suite
from geobench.suite.yamlio import SuiteError

SUITE = """\
name: grid
description: text
base:
  data: {name: toy_mixture, n_train: 32, n_test: 16, batch_size: 8}
  augment: {name: toy_none}
  backbone: {name: toy_mlp}
  objective: {name: toy_ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 20}
grid:
  optimizer.lr: [0.05, 0.1, 0.2]
  tags.x: [u, v]
zip:
  - {optimizer.momentum: [0.0, 0.5], tags.m: [m0, m1]}
seeds: 3
"""
LRS, XS, ZIP = [0.05, 0.1, 0.2], ["u", "v"], [(0.0, "m0"), (0.5, "m1")]


def _cells(tmp_path, text=SUITE, profile="smoke", **kw):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return Study(load_suite(path), registry(), profile, **kw).cells


def _points(cells):
    return sorted((c.varied["optimizer.lr"], c.varied["tags.x"], c.varied["optimizer.momentum"],
                   c.varied["tags.m"], c.trial_seed) for c in cells)


def test_every_grid_point_zip_row_and_seed_once(tmp_path):
    cells = _cells(tmp_path)
    want = sorted((lr, x, mom, m, s) for lr, x, (mom, m), s in
                  itertools.product(LRS, XS, ZIP, range(3)))
    assert len(cells) == 3 * 2 * 2 * 3 and _points(cells) == want
    cell = cells[0]
    assert set(cell.varied) == {"optimizer.lr", "tags.x", "optimizer.momentum", "tags.m",
                                "trial_seed"}
    arm = cell.arms["main"]
    assert (arm["optimizer"]["lr"], arm["optimizer"]["momentum"]) == (
        cell.varied["optimizer.lr"], cell.varied["optimizer.momentum"])
    assert arm["tags"] == {"x": cell.varied["tags.x"], "m": cell.varied["tags.m"]}


def test_excluded_combinations_are_left_out(tmp_path):
    text = SUITE + "exclude:\n  - {optimizer.lr: 0.1, tags.x: u}\n  - {tags.m: m1, tags.x: v}\n"
    got = _points(_cells(tmp_path, text))
    want = sorted((lr, x, mom, m, s) for lr, x, (mom, m), s in
                  itertools.product(LRS, XS, ZIP, range(3))
                  if not (lr == 0.1 and x == "u") and not (m == "m1" and x == "v"))
    assert len(got) == 36 - 6 - 9 and got == want  # the two excludes are disjoint
    never = SUITE + "exclude:\n  - {optimizer.lr: 0.1, train.steps: 99}\n"  # base value 20
    with pytest.raises(SuiteError, match="exclude: 99 is not a value of 'train.steps' in "
                                         "profile smoke; it takes: 20"):
        _cells(tmp_path, never)
    every = SUITE + "exclude:\n  - {train.steps: 20}\n"
    with pytest.raises(SuiteError, match="exclude: every cell of profile 'smoke' is excluded"):
        _cells(tmp_path, every)


def test_cell_ids_are_sha256_of_the_canonical_json(tmp_path):
    cells = _cells(tmp_path)
    for cell in cells:
        payload = {"suite": "grid", "profile": "smoke", "trial_seed": cell.trial_seed,
                   "arms": cell.arms, "versions": cell.versions}
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        assert cell.id == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert len({c.id for c in cells}) == len(cells)
    assert cell_id({"b": 1, "a": [1, 2]}) == hashlib.sha256(b'{"a":[1,2],"b":1}').hexdigest()[:16]
    same = _cells(tmp_path, SUITE.replace("description: text", "description: other"))
    assert [c.id for c in same] == [c.id for c in cells]
    renamed = _cells(tmp_path, SUITE.replace("name: grid", "name: grid2"))
    assert not {c.id for c in renamed} & {c.id for c in cells}


def test_seed_lists_and_profiles(tmp_path):
    text = SUITE.replace("seeds: 3", "seeds: [7, 2]") + """\
profiles:
  full:
    grid: {optimizer.lr: [0.3]}
    zip: []
    seeds: 4
    exclude: [{tags.x: v}]
"""
    assert sorted({c.trial_seed for c in _cells(tmp_path, text)}) == [2, 7]
    full = _cells(tmp_path, text, "full")
    assert sorted((c.varied["optimizer.lr"], c.varied["tags.x"], c.trial_seed) for c in full) == [
        (0.3, "u", s) for s in range(4)]
    assert all(c.profile == "full" and "tags.m" not in c.varied for c in full)
    with pytest.raises(SuiteError, match=r"no profile 'ful' \(did you mean 'full'\?\)"):
        _cells(tmp_path, text, "ful")


def test_overrides_apply_to_every_cell(tmp_path):
    cells = _cells(tmp_path, overrides={"train.steps": 7})
    assert len(cells) == 36 and {c.arms["main"]["train"]["steps"] for c in cells} == {7}
    assert all(c.varied["train.steps"] == 7 for c in cells)


def test_the_cell_limit_counts_before_exclusions(tmp_path):
    text = SUITE + "exclude:\n  - {tags.x: v}\n"
    assert len(_cells(tmp_path, text, cell_limit=36)) == 18
    with pytest.raises(SuiteError, match=r"profile 'smoke' expands to 36 cells \(3 x 2 x 2 x 3 "
                                         r"seeds\); the limit is 35"):
        _cells(tmp_path, text, cell_limit=35)


@pytest.mark.parametrize("grid, words", [
    ("  optimizer: [{name: sgd, lr: 0.3}]\n",
     r"zip\[0\].optimizer.momentum: 'optimizer.momentum' is varied twice \(also grid.optimizer\)"),
    ("  tags.m: [a, b]\n", "'tags.m' is varied twice"),
    ("  optimizer.lr: []\n", "a grid axis needs at least one value"),
])
def test_each_key_is_varied_by_one_axis(tmp_path, grid, words):
    text = SUITE.replace("  optimizer.lr: [0.05, 0.1, 0.2]\n", grid)
    with pytest.raises(SuiteError, match=words):
        _cells(tmp_path, text)


def test_zipped_lists_have_equal_lengths(tmp_path):
    text = SUITE.replace("tags.m: [m0, m1]", "tags.m: [m0]")
    with pytest.raises(SuiteError, match=r"zip\[0\]: zipped lists must have equal lengths "
                                         r"\(got 2, 1\)"):
        _cells(tmp_path, text)


def test_a_grid_key_of_one_arm_leaves_the_other_arms_alone(tmp_path):
    text = SUITE.replace("  optimizer.lr: [0.05, 0.1, 0.2]\n", "  arms.a.optimizer.lr: [0.5]\n")
    cells = _cells(tmp_path, text + "arms:\n  a: {}\n  b: {}\n")
    assert {(c.arms["a"]["optimizer"]["lr"], c.arms["b"]["optimizer"]["lr"])
            for c in cells} == {(0.5, 0.1)}
