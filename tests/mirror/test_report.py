"""``geobench mirror-figures`` on a real store: histogram and pruning values averaged over
the seeds of the complete cells, one panel per setting, one line per arm."""

from __future__ import annotations

import numpy as np
import pytest

from geobench.cli import main as geobench
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.mirror.helpers import TINY_BASE

SUITE = "name: mirror_report\n" + TINY_BASE + """\
  metrics:
    - {name: neuron_histogram, bins: 2, low: 0.01}
    - {name: pruning_curve, fractions: [0.0, 0.5]}
arms:
  gd: {optimizer: {mirror_map: {name: euclidean}}}
  hyp: {optimizer: {mirror_map: {name: hypentropy, lam: 0.05}}}
grid:
  backbone.width: [8, 12]
seeds: 3
"""


def _finals(width: int, seed: int) -> dict[str, float]:
    """gd's histogram [0.2 + seed/10, 0.8 - seed/10], hyp's [0.5, 0.5]; pruning accuracy
    1.0 unpruned and width/20 + seed/10 at 50% (gd), 0.5 (hyp)."""
    return {"gd/neuron_histogram.bin_0": 0.2 + seed / 10,
            "gd/neuron_histogram.bin_1": 0.8 - seed / 10,
            "hyp/neuron_histogram.bin_0": 0.5, "hyp/neuron_histogram.bin_1": 0.5,
            "gd/pruning_curve.acc_0": 1.0, "gd/pruning_curve.acc_50": width / 20 + seed / 10,
            "hyp/pruning_curve.acc_0": 1.0, "hyp/pruning_curve.acc_50": 0.5}


def _store(tmp_path, text: str):
    """Seeds 0 and 1 complete; seed 2 failed (values that must not count), except at width
    12, where it is complete but its hyp arm has no pruning values."""
    suite = tmp_path / "mirror_report.yaml"
    suite.write_text(text)
    db = tmp_path / "res" / "db.sqlite"
    store = Store(db)
    for cell in Study(load_suite(suite), registry(), "smoke").cells:
        width, seed = cell.varied["backbone.width"], cell.trial_seed
        finals = _finals(width, seed)
        status = "complete"
        if seed == 2 and width == 8:
            status, finals = "failed", {k: 100.0 for k in finals}
        elif seed == 2:
            finals = {k: v for k, v in finals.items() if not k.startswith("hyp/pruning")}
        store.write(cell, CellResult(cell.id, status, finals=finals), {})
    store.close()
    return suite, db


@pytest.fixture
def stored(tmp_path):
    return _store(tmp_path, SUITE)


def test_the_command_writes_both_figures_beside_the_leaderboard(stored, capsys):
    suite, db = stored
    assert geobench(["mirror-figures", str(suite), "--store", str(db)]) == 0
    folder = db.parent / "leaderboards"  # where `geobench leaderboard` writes by default
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {folder / 'mirror_report_neurons.png'} (2 panels, 2 arms each)",
        f"wrote {folder / 'mirror_report_pruning.png'}"]
    assert (folder / "mirror_report_neurons.png").stat().st_size > 0
    assert (folder / "mirror_report_pruning.png").stat().st_size > 0


def test_the_figures_average_the_complete_cells(stored, monkeypatch):
    suite, db = stored
    drawn = {}
    monkeypatch.setattr("geobench_mirror.report.plot", lambda means, xs, title,
                        metric="neuron_histogram": drawn.update({metric: (means, xs)})
                        or metric.encode())  # the "figure" names what was drawn
    out = db.parent / "figs" / "h.png"
    assert geobench(["mirror-figures", str(suite), "--store", str(db), "--out",
                     str(out)]) == 0
    means, edges = drawn["neuron_histogram"]
    assert out.read_bytes() == b"neuron_histogram"
    np.testing.assert_allclose(edges, [0.01, 0.1, 1.0])  # 2 log-spaced bins over [low, 1]
    assert set(means) == {"backbone.width=8", "backbone.width=12"}
    np.testing.assert_allclose(means["backbone.width=8"]["gd"], [0.25, 0.75])  # seeds 0, 1
    np.testing.assert_allclose(means["backbone.width=12"]["gd"], [0.3, 0.7])  # seeds 0-2
    np.testing.assert_allclose(means["backbone.width=8"]["hyp"], [0.5, 0.5])

    curves, percents = drawn["pruning_curve"]
    assert out.with_name("h_pruning.png").read_bytes() == b"pruning_curve"
    assert list(percents) == [0, 50]
    np.testing.assert_allclose(curves["backbone.width=8"]["gd"], [1.0, 0.45])
    np.testing.assert_allclose(curves["backbone.width=12"]["gd"], [1.0, 0.7])
    np.testing.assert_allclose(curves["backbone.width=12"]["hyp"], [1.0, 0.5])


def test_no_finished_cell_is_exit_1(tmp_path, capsys):
    suite = tmp_path / "mirror_report.yaml"
    suite.write_text(SUITE)
    db = tmp_path / "db.sqlite"
    Store(db).close()
    assert geobench(["mirror-figures", str(suite), "--store", str(db)]) == 1
    assert capsys.readouterr().err == (f"no finished cells with neuron_histogram values of "
                                       f"{suite} [smoke] in {db}\n")
    assert not (tmp_path / "leaderboards").exists()


def test_panels_are_the_leaderboard_rows(tmp_path, monkeypatch):
    """A zip varies the width with gd's step; the leaderboard's rows name the width alone,
    and so do the panels (not every zipped key)."""
    text = SUITE.replace("grid:\n  backbone.width: [8, 12]\n",
                         "zip:\n  - backbone.width: [8, 12]\n"
                         "    arms.gd.optimizer.lr: [0.1, 0.05]\n"
                         "leaderboard: {rows: [arm, backbone.width]}\n")
    assert text != SUITE
    suite, db = _store(tmp_path, text)
    drawn = {}
    monkeypatch.setattr("geobench_mirror.report.plot", lambda means, xs, title,
                        metric="neuron_histogram": drawn.update({metric: means})
                        or metric.encode())
    assert geobench(["mirror-figures", str(suite), "--store", str(db), "--out",
                     str(tmp_path / "h.png")]) == 0
    assert set(drawn["neuron_histogram"]) == {"backbone.width=8", "backbone.width=12"}
    np.testing.assert_allclose(drawn["pruning_curve"]["backbone.width=12"]["gd"], [1.0, 0.7])
