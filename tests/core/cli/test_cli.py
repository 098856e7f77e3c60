"""show / results / leaderboard commands on a real (tiny) run."""

import json

from geobench.cli import main
from tests.core.suite_text import small_suite


def test_show_results_and_leaderboard(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    assert main(["show", "s.yaml"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("small [smoke]: 2 cells, arms: main")
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "2 cells: 0 already stored, 2 run (2 complete, 0 diverged, 0 failed)" in out
    assert "wrote leaderboards/small.md" in out
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]) == 0
    assert ("2 cells: 2 already stored, 0 run (0 complete, 0 diverged, 0 failed)"
            in capsys.readouterr().out)

    assert main(["results", "s.yaml", "--store", "db.sqlite", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"complete"}
    row = rows[0]
    assert set(row) >= {"cell", "trial_seed", "config", "status", "error", "metrics"}
    assert sorted(r["trial_seed"] for r in rows) == [0, 1]
    assert row["config"]["arms"]["main"]["optimizer"]["lr"] == 0.1
    assert set(row["metrics"]) == {"nccc.accuracy", "loss.train"}
    assert (tmp_path / "leaderboards" / "small_loss.train.png").exists()
