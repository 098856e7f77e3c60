"""The mirror components through the engine: a tiny suite with every mirror metric, its
leaderboard and the neuron-weight histogram plot."""

from __future__ import annotations

import math
import sqlite3

import pytest

from geobench.cli import main as geobench
from tests.mirror.helpers import TINY_BASE

SUITE = "name: mirror_tiny\n" + TINY_BASE + """\
  metrics:
    - {name: q_margin, every: 20}
    - {name: alignment_time, every: 20}
    - {name: balance, every: 20}
    - {name: horizon}
    - {name: kkt_residual, deltas: [0.01, 0.5]}
    - {name: active_neurons}
    - {name: sparsity}
    - {name: neuron_histogram, bins: 4}
    - {name: pruning_curve, fractions: [0.0, 0.5]}
    - {name: distance_to_reference, every: 20}
arms:
  gd: {optimizer: {mirror_map: {name: euclidean}}}
  hyp: {optimizer: {lr: 1.0, mirror_map: {name: hypentropy, lam: 0.05}}}
  layered: {optimizer: {maps: {"backbone.layers.0.*": {name: hypentropy, lam: 0.05},
                               "*": {name: hypentropy, lam: 1.0}}}}
leaderboard:
  rows: [arm]
  metrics:
    - {key: balance.drift}
    - {key: pruning_curve.acc_50}
"""


def test_tiny_suite_runs_and_reports(tmp_path):
    suite = tmp_path / "mirror_tiny.yaml"
    suite.write_text(SUITE)
    store, board = tmp_path / "db.sqlite", tmp_path / "board" / "mirror_tiny.md"
    board.parent.mkdir()
    assert geobench(["run", str(suite), "--store", str(store), "--out", str(board),
                     "--quiet"]) == 0
    with sqlite3.connect(store) as con:
        status, error = con.execute("SELECT status, error FROM cells").fetchone()
        finals = dict(con.execute("SELECT key, value FROM finals").fetchall())
    assert status == "complete", error
    for arm in ("gd", "hyp", "layered"):
        for key in ("q_margin.gamma", "alignment_time.ratio", "balance.drift",
                    "horizon.rel_gap", "active_neurons.active", "sparsity.gini",
                    "pruning_curve.acc_50", "neuron_histogram.bin_0"):
            assert math.isfinite(finals[f"{arm}/{key}"]), (arm, key)
        assert finals[f"{arm}/horizon.rel_gap"] < 1e-8
        bins = [finals[f"{arm}/neuron_histogram.bin_{i}"] for i in range(4)]
        assert sum(bins) == pytest.approx(1.0)
    assert finals["gd/alignment_time.ratio"] == pytest.approx(1.0)
    for arm in ("hyp", "layered"):  # measured against the first arm, gd
        assert 0 < finals[f"gd~{arm}/distance_to_reference.relative"] < 2
        assert 0 <= finals[f"gd~{arm}/distance_to_reference.agreement"] <= 1
    assert "gd/distance_to_reference.relative" not in finals
    assert "pruning_curve.acc_50" in board.read_text()

    out = tmp_path / "hist.png"
    assert geobench(["mirror-figures", str(suite), "--store", str(store), "--out",
                     str(out)]) == 0
    assert out.stat().st_size > 0
    assert (tmp_path / "hist_pruning.png").stat().st_size > 0


LINEAR = """\
name: linear_tiny
base:
  data: {name: linear_teacher, dim: 12, support: 2, n_train: 8, n_test: 32, batch_size: 8,
         reference_size: 4}
  backbone: {name: mlp, depth: 1, width: 1, out_dim: 1, bias: false}
  head: {name: identity}
  objective: {name: logistic}
  optimizer: {name: mirror_descent, lr: 1.0}
  train: {steps: 300, device: cpu}
  metrics:
    - {name: max_margin_direction, every: 100}
arms:
  gd: {optimizer: {mirror_map: {name: euclidean}}}
  hyp: {optimizer: {mirror_map: {name: hypentropy, lam: 0.01}}}
"""


def test_linear_classifier_is_measured_against_the_solvers(tmp_path):
    """Through the engine: the cosines with the solver directions are recorded per arm, each
    arm's own is the one of its horizon degree, and a separating direction has a margin
    ratio in (0, 1]."""
    suite = tmp_path / "linear_tiny.yaml"
    suite.write_text(LINEAR)
    store = tmp_path / "db.sqlite"
    assert geobench(["run", str(suite), "--store", str(store), "--no-leaderboard",
                     "--quiet"]) == 0
    with sqlite3.connect(store) as con:
        finals = dict(con.execute("SELECT key, value FROM finals").fetchall())
    assert finals["gd/max_margin_direction.cos_own"] == finals["gd/max_margin_direction.cos_l2"]
    assert finals["hyp/max_margin_direction.cos_own"] == \
        finals["hyp/max_margin_direction.cos_l1"]
    for arm in ("gd", "hyp"):
        assert 0 < finals[f"{arm}/max_margin_direction.margin_ratio"] <= 1 + 1e-9
