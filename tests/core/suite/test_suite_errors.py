"""A malformed suite gets one line naming file, line and key; exit 2; nothing stored."""

import pytest

from geobench.cli import main
from tests.conftest import run_cli
from tests.core.suite_text import CLAIMS_BASE, small_suite

GOOD = small_suite()


@pytest.mark.parametrize("bad,expected", [
    (GOOD.replace("[0.05, 0.1]", "[0.05, 0.1"),
     "bad.yaml:16: invalid YAML: expected ',' or ']'"),
    (GOOD.replace("{name: sgd, lr: 0.1}", "{name: sgdd, lr: 0.1}"),
     "bad.yaml:10: base.optimizer.name: 'sgdd' is not a registered optimizer "
     "(did you mean 'sgd'?)"),
    (GOOD.replace("optimizer.lr: [0.05, 0.1]", "backbone.activation: [relu, gelu, gleu]"),
     "bad.yaml:15: grid.backbone.activation[2]: 'gleu' is not an allowed activation "
     "(did you mean 'gelu'?)"),
    (GOOD.replace("depth: 2, width: 16", "depth: 2, widht: 16"),
     "bad.yaml:7: base.backbone.widht: unknown field 'widht' (did you mean 'width'?)"),
    (GOOD.replace("optimizer.lr: [0.05, 0.1]", "optimiser.lr: [0.05, 0.1]"),
     "bad.yaml:15: grid.optimiser.lr: 'optimiser.lr' is not a run-spec key "
     "(did you mean 'optimizer'?)"),
    (GOOD.replace("train: {steps: 20, device: cpu}", "train: {steps: twenty, device: cpu}"),
     "bad.yaml:11: base.train.steps: Input should be a valid integer"),
])
def test_malformed_suite_is_one_line_exit_2_nothing_stored(tmp_path, monkeypatch, capsys,
                                                         bad, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text(bad)
    assert main(["run", "bad.yaml", "--store", "db.sqlite"]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning: plugin")]
    assert len(lines) == 1 and lines[0].startswith(expected), err
    assert not (tmp_path / "db.sqlite").exists()


def test_error_from_the_command_line_has_no_traceback(tmp_path, site):
    bad = GOOD.replace("{name: sgd, lr: 0.1}", "{name: sgd, lr: 0.1, momentum: x}")
    (tmp_path / "bad.yaml").write_text(bad)
    out = run_cli(["validate", "bad.yaml"], tmp_path, site, toy=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("bad.yaml:10: base.optimizer.momentum: ")


def test_a_value_left_to_the_grid_is_not_missing_but_a_written_one_is_checked(tmp_path, capsys):
    left = GOOD.replace("{name: sgd, lr: 0.1}", "{name: sgd}")  # every lr from the grid
    (tmp_path / "left.yaml").write_text(left)
    assert main(["validate", str(tmp_path / "left.yaml")]) == 0
    bad = GOOD.replace("{name: sgd, lr: 0.1}", "{name: sgd, lr: -1}")  # overridden, still bad
    (tmp_path / "bad.yaml").write_text(bad)
    assert main(["validate", str(tmp_path / "bad.yaml")]) == 2
    assert "bad.yaml:10: base.optimizer.lr: Input should be greater than 0" in (
        capsys.readouterr().err)


THREE = "name: three\n" + CLAIMS_BASE + """\
  metrics:
    - {name: nccc}
arms:
  gd: {head: {name: identiy}}
  wide: {backbone: {width: -4}}
seeds: 3
claims:
  - id: lr_helps
    statement: the larger step helps
    metric: gd/nccc.accuracy
    expect: "> 0.5"
    where: {optimzer.lr: 0.1}
"""


def test_validate_reports_every_independent_error_in_file_order(tmp_path, monkeypatch,
                                                                  capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "three.yaml").write_text(THREE)
    assert main(["validate", "three.yaml"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "three.yaml:12: arms.gd.head.name: 'identiy' is not a registered head (did you mean "
        "'identity'?); registered: identity, linear, mlp",
        "three.yaml:13: arms.wide.backbone.width: Input should be greater than or equal to 1 "
        "(got -4)",
        "three.yaml:20: claims[0].where.optimzer.lr: 'optimzer.lr' is not a run-spec key "
        "(did you mean 'optimizer'?); keys start with one of: data, augment, backbone, "
        "head, objective, optimizer, init, train, metrics, tags, replicate, arms",
    ]


def test_schema_errors_each_once_and_a_base_error_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    two = THREE.replace("seeds: 3", "seeds: three\nprofiles: {mid: {seeds: 2, grid: []}}")
    (tmp_path / "two.yaml").write_text(two)
    assert main(["validate", "two.yaml"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "two.yaml:14: seeds: Input should be a valid integer (got 'three')",
        "two.yaml:15: profiles.mid.grid: Input should be a valid dictionary (got [])",
    ]
    base = GOOD.replace("{name: sgd, lr: 0.1}", "{name: sgdd, lr: 0.1}").replace(
        "seeds: 2", "seeds: 2\nprofiles: {mid: {seeds: 3}}")
    (tmp_path / "base.yaml").write_text(base)
    assert main(["validate", "base.yaml"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "base.yaml:10: base.optimizer.name: 'sgdd' is not a registered optimizer (did you "
        "mean 'sgd'?); registered: adam, adamw, lars, sgd",
    ]
