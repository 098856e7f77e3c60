"""A malformed suite gets one line naming file, line and key; exit 2; nothing stored."""

import pytest

from geobench.cli import main
from tests.conftest import run_cli
from tests.core.suite_text import small_suite

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
