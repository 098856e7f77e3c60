"""Each paper plugin's figure command answers a missing suite, a missing store and a file
that is no store with one line and exit 2, and creates or touches nothing."""

import pytest

from geobench.cli import main

SUITE = """\
name: figures
base:
  data: {name: gaussian_mixture, num_classes: 3, dim: 8, n_train: 96, n_test: 48, batch_size: 32,
         reference_size: 32}
  backbone: {name: mlp, depth: 2, width: 16}
  objective: {name: ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 2, device: cpu}
"""


@pytest.mark.parametrize("command", [["projection-figures", "--key", "loss.train", "--out",
                                      "f.png"], ["alignment-figures"], ["mirror-figures"]])
def test_a_missing_suite_or_store_is_one_line_and_exit_2(command, tmp_path, monkeypatch,
                                                         capsys):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    name, *options = command
    assert main([name, "missing.yaml", *options]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "missing.yaml: no such suite file\n"
    assert main([name, str(suite), "--store", "nowhere.sqlite", *options]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "nowhere.sqlite: results store: no such file\n"
    assert not (tmp_path / "nowhere.sqlite").exists()
    (tmp_path / "junk.sqlite").write_text("not a database, " * 100)
    assert main([name, str(suite), "--store", "junk.sqlite", *options]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("junk.sqlite: results store: not a SQLite database")
    assert (tmp_path / "junk.sqlite").read_text() == "not a database, " * 100
