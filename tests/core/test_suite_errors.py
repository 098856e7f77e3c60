"""A malformed suite gets one line naming file, line and key; exit 2; nothing stored."""

import pytest

from tests.conftest import run_cli
from tests.core.suite_text import small_suite

GOOD = small_suite()


@pytest.mark.parametrize("bad,expected", [
    (GOOD.replace("LRS", "x").replace("  optimizer.lr: [0.05, 0.1]",
                                      "  optimizer.lr: [0.05, 0.1\n"),
     "bad.yaml:19: invalid YAML"),
    (GOOD.replace("{name: sgd, lr: 0.1}", "{name: sgdd, lr: 0.1}"),
     "bad.yaml:9: base.optimizer.name: 'sgdd' is not a registered optimizer "
     "(did you mean 'sgd'?)"),
    (GOOD.replace("optimizer.lr: [0.05, 0.1]", "backbone.activation: [relu, gelu, gleu]"),
     "bad.yaml:16: grid.backbone.activation[2]: 'gleu' is not an allowed activation "
     "(did you mean 'gelu'?)"),
    (GOOD.replace("depth: 2, width: 16", "depth: 2, widht: 16"),
     "bad.yaml:6: base.backbone.widht: unknown field 'widht' (did you mean 'width'?)"),
    (GOOD.replace("optimizer.lr: [0.05, 0.1]", "optimiser.lr: [0.05, 0.1]"),
     "bad.yaml:16: grid.optimiser.lr: 'optimiser.lr' is not a run-spec key "
     "(did you mean 'optimizer'?)"),
    (GOOD.replace("train: {steps: 20, device: cpu}", "train: {steps: twenty, device: cpu}"),
     "bad.yaml:11: base.train.steps: "),
])
def test_malformed_suite_is_one_line_exit_2_nothing_stored(tmp_path, bad, expected):
    (tmp_path / "bad.yaml").write_text(bad)
    out = run_cli(["run", "bad.yaml", "--store", "db.sqlite"], tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    lines = [ln for ln in lines if not ln.startswith("warning: plugin")]
    assert len(lines) == 1 and lines[0].startswith(expected), out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "db.sqlite").exists()
