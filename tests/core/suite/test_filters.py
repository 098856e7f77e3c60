"""Filters that can match: values a filter may name (lists as one value, ``arms.<arm>.``
keys), excludes that drop cells in some of their profiles, ``--set`` beside an exclude,
and a claim a profile cannot decide listed as ``not in this profile`` by the claims
command, its units CSV, Holm's family and the independent recomputation."""

import csv
import io
import json

import pytest

from geobench.claims.claims_table import summary_line
from geobench.claims.registration import claim_digests
from geobench.claims.select import key_pairs
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import NOT_IN_PROFILE, evaluate
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import SuiteError, load_suite
from geobench.suite.where import config_keys, config_value, values_taken
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: filters\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.2]
seeds: 4
profiles:
  narrow:
    grid: {optimizer.lr: [0.05]}
claims:
  - {id: low, statement: a, metric: nccc.accuracy, expect: "> 0", where: {optimizer.lr: 0.05}}
  - {id: high, statement: b, metric: nccc.accuracy, expect: "> 0", where: {optimizer.lr: 0.2}}
  - {id: paired, statement: c, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
  - {id: both, statement: d, metric: nccc.accuracy, expect: "> 0", where: {optimizer.lr: 0.05},
     also: [{metric: nccc.accuracy, expect: "> 0", where: {optimizer.lr: 0.2}}]}
"""


def _write(tmp_path, text: str = SUITE):
    (tmp_path / "f.yaml").write_text(text)
    return load_suite(tmp_path / "f.yaml")


def test_a_claim_the_profile_cannot_decide_is_not_in_this_profile(tmp_path, capsys,
                                                                   recompute_claims):
    loaded = _write(tmp_path)
    cells = Study(loaded, registry(), "narrow").cells
    assert {c.varied["optimizer.lr"] for c in cells} == {0.05}
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # 1 + seed / 10: every decidable claim holds
        v = 1.0 + cell.trial_seed / 10
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", 30, v)],
                                     claims=claim_digests(loaded.suite)), {})
    store.close()
    args = ["claims", str(tmp_path / "f.yaml"), "--profile", "narrow", "--store",
            str(tmp_path / "db.sqlite")]
    assert main(args + ["--json"]) == 0
    got = {c["id"]: c for c in map(json.loads, capsys.readouterr().out.splitlines())}
    assert (got["low"]["verdict"], got["low"]["n"]) == ("holds", 4)
    for cid in ("high", "paired", "both"):  # no cell at lr 0.2 in this profile
        assert got[cid]["verdict"] == got[cid]["verdict_holm"] == NOT_IN_PROFILE, cid
        assert got[cid]["p_value"] is None
    assert got["high"]["n"] == got["paired"]["n"] == 0
    # outside Holm's family: low alone is tested, so it keeps its raw verdict
    assert got["low"]["verdict_holm"] == "holds"
    assert [p["verdict"] for p in got["both"]["parts"]] == ["holds", NOT_IN_PROFILE]

    assert main(args + ["--units", "--csv"]) == 0
    text = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(text)))
    absent = {(r["claim"], r["part"]): r["excluded"] for r in rows if r["excluded"]}
    assert absent[("high", "1")] == "absent: no cell of this profile selected"
    assert absent[("both", "2")] == "absent: no cell of this profile selected"
    assert absent[("paired", "1")] == "absent: no partner cell selected in this profile"
    assert sum(r["claim"] == "paired" for r in rows) == 4  # one unit per trial seed
    (tmp_path / "units.csv").write_text(text)
    again = recompute_claims.recompute_claims(str(tmp_path / "units.csv"))
    assert {c: (r["verdict"], r["verdict_holm"]) for c, r in again.items()} == {
        "low": ("holds", "holds"), "high": (NOT_IN_PROFILE, NOT_IN_PROFILE),
        "paired": (NOT_IN_PROFILE, NOT_IN_PROFILE), "both": (NOT_IN_PROFILE, NOT_IN_PROFILE)}

    verdicts = evaluate(loaded, cells, StoredValues(Store(tmp_path / "db.sqlite"), cells),
                        registry())
    assert "1 holds / 0 fails / 0 inconclusive / 0 insufficient / 3 not in this profile" \
        in summary_line(verdicts)
    empty = {v.claim.id: v for v in evaluate(
        loaded, cells, StoredValues(Store(tmp_path / "empty.sqlite"), cells), registry())}
    paired = empty["paired"]  # a side absent, b side not run: absent, not missing
    assert (paired.verdict, paired.missing, paired.excluded) == (NOT_IN_PROFILE, 0, 4)
    assert paired.units[0].excluded == ("a: absent: no partner cell selected in this "
                                        "profile; b: missing: not in the store")
    assert (empty["low"].verdict, empty["low"].missing) == ("insufficient", 4)
    smoke = Study(loaded, registry()).cells  # the smoke profile has every cell: not stored yet
    assert {v.claim.id: v.verdict for v in evaluate(
        loaded, smoke, StoredValues(Store(tmp_path / "db.sqlite"), smoke), registry())} == {
        "low": "insufficient", "high": "insufficient", "paired": "insufficient",
        "both": "insufficient"}


def test_beside_sets_two_profiles_verdicts_side_by_side(tmp_path, capsys):
    loaded = _write(tmp_path)
    store = Store(tmp_path / "db.sqlite")
    for profile, sign in (("smoke", 1.0), ("narrow", -1.0)):
        for cell in Study(loaded, registry(), profile).cells:  # smoke: above 0 at lr 0.05 only
            lr = cell.varied["optimizer.lr"]
            v = (sign if lr == 0.05 else -1.0) + cell.trial_seed / 10
            store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                         series=[("main", "nccc.accuracy", 30, v)],
                                         claims=claim_digests(loaded.suite)), {})
    store.close()
    args = ["claims", str(tmp_path / "f.yaml"), "--profile", "narrow", "--beside", "smoke",
            "--store", str(tmp_path / "db.sqlite")]
    assert main(args) == 0
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| `")}
    # seeds 0..3 add 0, .1, .2, .3: mean ±1 + 0.15, t interval ± 3.182 * 0.129 / 2
    assert rows["`low`"] == ["+1.15 [+0.945, +1.36]", "holds / holds",
                             "-0.85 [-1.06, -0.645]", "fails / fails", "changed"]
    assert rows["`high`"] == ["-0.85 [-1.06, -0.645]", "fails / fails", "—",
                              f"{NOT_IN_PROFILE} / {NOT_IN_PROFILE}", ""]
    assert main(args + ["--json"]) == 2
    assert "--beside prints one table" in capsys.readouterr().err
    assert main(args[:4] + ["--beside", "narrow"] + args[6:]) == 2
    assert "--beside narrow is the profile shown" in capsys.readouterr().err
    # a profile's leaderboard says how to make it again, naming no path of this machine:
    # the suite and page lie outside the working folder, so by their names alone
    for profile, flag in (("narrow", " --profile narrow"), ("smoke", "")):
        out = tmp_path / f"{profile}.md"
        assert main(["leaderboard", str(tmp_path / "f.yaml"), "--profile", profile, "--store",
                     str(tmp_path / "db.sqlite"), "--out", str(out)]) == 0
        assert (f"the values by `geobench run f.yaml{flag}`, this page by "
                f"`geobench leaderboard f.yaml{flag} --out {profile}.md`") in out.read_text()
        assert str(tmp_path) not in out.read_text()


def test_a_list_value_may_be_one_value_of_its_key(tmp_path, capsys):
    text = SUITE.replace("  optimizer.lr: [0.05, 0.2]\n",
                         "  optimizer.lr: [0.05, 0.2]\n  data.classes: [[0, 1], [1, 2]]\n")
    text = text.replace("where: {optimizer.lr: 0.05}}\n  - {id: high",
                        "where: {data.classes: [0, 1]}}\n  - {id: high", 1)
    cells = Study(_write(tmp_path, text), registry()).cells
    assert values_taken(cells, "data.classes") == [[0, 1], [1, 2]]
    (tmp_path / "bad.yaml").write_text(
        text.replace("where: {data.classes: [0, 1]}", "where: {data.classes: [0, 2]}"))
    assert main(["validate", str(tmp_path / "bad.yaml")]) == 2
    assert "claims[0].where.data.classes: claim 'low': 0 is not a value of 'data.classes' " \
           "in any cell; it takes: [0, 1], [1, 2]" in capsys.readouterr().err


def test_arm_keys_read_that_arms_spec(tmp_path):
    text = SUITE.replace("grid:\n", "arms:\n  x: {}\n  y: {backbone: {width: 8}}\ngrid:\n")
    text = text.split("claims:\n")[0]
    cells = Study(_write(tmp_path, text), registry()).cells
    assert config_value(cells[0], "arms.y.backbone.width") == 8
    assert config_value(cells[0], "arms.x.backbone.width") == 16
    assert {"arms.y.backbone.width", "backbone.width", "optimizer.momentum"} \
        <= config_keys(cells)
    assert "backbone.widht" not in config_keys(cells)


def test_an_exclude_may_drop_cells_of_one_profile_only_and_sits_beside_set(tmp_path, capsys):
    text = SUITE.replace("seeds: 4\n", "seeds: 4\nexclude:\n  - {optimizer.lr: 0.2}\n"
                         "  - {optimizer.lr: 0.5}\n").replace(
        "grid: {optimizer.lr: [0.05]}", "grid: {optimizer.lr: [0.05, 0.5]}")
    text = text.split("claims:\n")[0]
    _write(tmp_path, text)
    path = str(tmp_path / "f.yaml")
    assert main(["validate", path]) == 0  # 0.2 drops smoke cells, 0.5 narrow ones
    assert main(["validate", path, "--set", "train.steps=7"]) == 0
    assert "valid (4 cells" in capsys.readouterr().out
    (tmp_path / "f.yaml").write_text(text.replace("lr: 0.5}\n", "lr: 0.7}\n"))
    assert main(["validate", path]) == 2
    assert "exclude[1].optimizer.lr: exclude: 0.7 is not a value of 'optimizer.lr' in " \
           "profiles smoke, narrow; it takes: 0.05, 0.2, 0.5" in capsys.readouterr().err


def test_an_exclude_matches_the_declared_values_whatever_set_changes(tmp_path, capsys):
    text = SUITE.split("profiles:\n")[0] + "exclude:\n  - {optimizer.lr: 0.2, train.steps: 30}\n"
    path = str(_write(tmp_path, text).path)
    assert main(["show", path, "--set", "train.steps=7"]) == 0
    assert "filters [smoke]: 4 cells" in capsys.readouterr().out  # lr 0.2 still dropped
    assert main(["show", path, "--set", "optimizer.lr=0.1"]) == 2
    assert "--set optimizer.lr: 'optimizer.lr' is varied by grid.optimizer.lr in profile " \
           "'smoke'" in capsys.readouterr().err


def test_an_exclude_reads_inside_a_varied_component(tmp_path):
    text = SUITE.split("profiles:\n")[0].replace(
        "  optimizer.lr: [0.05, 0.2]\n",
        "  optimizer: [{name: sgd, lr: 0.05}, {name: sgd, lr: 0.2}]\n  train.steps: [10, 30]\n")
    text += "exclude:\n  - {optimizer.lr: 0.2, train.steps: 10}\n"
    cells = Study(_write(tmp_path, text), registry()).cells
    assert sorted({(c.arms["main"]["optimizer"]["lr"], c.arms["main"]["train"]["steps"])
                   for c in cells}) == [(0.05, 10), (0.05, 30), (0.2, 30)]


def test_a_compare_side_that_selects_two_cells_of_a_seed_is_refused(tmp_path):
    """A value repeated inside the compared key's zip group would pair one cell of the two
    with the other side (before: whichever came last)."""
    text = "name: filters\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
zip:
  - tags.point: [low, reference, high, wide]
    optimizer.lr: [0.05, 0.2, 0.2, 0.2]
    data.batch_size: [32, 32, 32, 16]
seeds: 4
claims:
  - {id: rises, statement: a, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
"""
    with pytest.raises(SuiteError, match=r"claims\[0\]\.where: claim 'rises': optimizer.lr = "
                       r"0.2 selects 3 cells of one trial seed in profile 'smoke', differing "
                       r"in data.batch_size, tags.point; narrow its 'where' to the one to compare"):
        Study(_write(tmp_path, text), registry())
    narrowed = text.replace('compare:', 'where: {tags.point: [low, reference]}, compare:')
    loaded = _write(tmp_path, narrowed)
    cells = Study(loaded, registry()).cells
    chosen = [c for c in cells if c.varied["tags.point"] in ("low", "reference")]
    pairs = key_pairs(loaded.suite, chosen, "optimizer.lr", 0.2, 0.05)
    assert sorted((a.varied["tags.point"], b.varied["tags.point"], a.trial_seed == b.trial_seed)
                  for a, b in pairs) == [("reference", "low", True)] * 4


def test_only_keeps_some_values_of_an_axis_and_the_cells_keep_their_ids(tmp_path, capsys):
    loaded = _write(tmp_path, SUITE.split("claims:\n")[0])
    every = Study(loaded, registry()).cells
    kept = Study(loaded, registry(), only={"optimizer.lr": [0.2]}).cells
    assert [c.id for c in kept] == [c.id for c in every if c.varied["optimizer.lr"] == 0.2]
    assert len(kept) == 4
    path = str(loaded.path)
    assert main(["show", path, "--only", "optimizer.lr=0.05", "--only", "optimizer.lr=0.2"]) == 0
    assert "filters [smoke]: 8 cells" in capsys.readouterr().out
    assert main(["show", path, "--only", "optimizer.lr=0.1"]) == 2
    assert capsys.readouterr().err.endswith(
        "--only optimizer.lr: 0.1 is not a value of 'optimizer.lr' in profile 'smoke'; it "
        "takes: 0.05, 0.2\n")
    assert main(["show", path, "--only", "train.steps=30"]) == 2
    assert "--only train.steps: 'train.steps' is not varied in profile 'smoke'; --only keeps " \
           "some values of a grid or zip key (varied: optimizer.lr)" in capsys.readouterr().err
