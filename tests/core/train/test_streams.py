"""The paired-seed protocol: every draw comes from (trial seed, stream), never from the cell.

1. adding or removing a metric leaves every other metric's values unchanged;
2. renaming the suite, editing its description / leaderboard / claims, or adding a grid
   value leaves the numbers of the cells that already existed unchanged;
3. cells that differ in one grid key with the same trial seed see the same batches, views
   and backbone initial weights; another trial seed changes all three.
All bit-identical, on the CPU.
"""

import hashlib

import torch

from geobench.contract.hooks import hookimpl
from geobench.contract.interfaces import Metric, MetricParams
from geobench.contract.manager import load_registry, registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError
from geobench.train.engine import run_cell

SUITE = """\
name: streams
description: paired-seed checks
base:
  data: {name: toy_mixture, num_classes: 3, dim: 8, n_train: 96, n_test: 64, batch_size: 16,
         reference_size: 32}
  augment: {name: toy_noise, sigma: 0.3}
  backbone: {name: toy_mlp, depth: 2, width: 16}
  head: {name: mlp, depth: 2, hidden: 16, out: 8, activation: relu}
  objective: {name: toy_ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 12, device: cpu}
  metrics: METRICS
grid:
  head.activation: ACTIVATIONS
seeds: [3, 7]
"""
EVAL = "{name: eval_loss, id: held_out, every: 4, max_batches: 3}"
NCCC = "{name: nccc, every: 6}"


def _cells(tmp_path, name="s.yaml", metrics=(EVAL, NCCC), activations=("relu", "gelu"),
           reg=None, **replace):
    text = SUITE.replace("METRICS", "[" + ", ".join(metrics) + "]")
    text = text.replace("ACTIVATIONS", "[" + ", ".join(activations) + "]")
    for old, new in replace.items():
        text = text.replace(old, new)
    (tmp_path / name).write_text(text)
    return Study(load_suite(tmp_path / name), reg or registry()).cells


def _by_key(cells):
    return {(c.varied["head.activation"], c.trial_seed): c for c in cells}


def _series(result, prefix):
    return [row for row in result.series if row[1].startswith(prefix)]


def test_adding_or_removing_metrics_changes_no_other_number(tmp_path):
    base = _by_key(_cells(tmp_path))[("gelu", 7)]
    more = _by_key(_cells(tmp_path, "more.yaml", metrics=(
        "{name: eval_loss, id: first, every: 3, max_batches: 2}", "{name: knn, every: 2}",
        EVAL, NCCC)))[("gelu", 7)]
    fewer = _by_key(_cells(tmp_path, "fewer.yaml", metrics=(EVAL,)))[("gelu", 7)]
    a, b, c = run_cell(base), run_cell(more), run_cell(fewer)
    assert a.status == b.status == c.status == "complete", a.traceback
    for prefix in ("held_out.", "loss.train"):
        assert _series(a, prefix) == _series(b, prefix) == _series(c, prefix)
        assert _series(a, prefix)
    assert _series(a, "nccc.") == _series(b, "nccc.")
    # the held-out loss draws its views from its own stream: a different id, other draws
    renamed = _by_key(_cells(tmp_path, "renamed.yaml", metrics=(
        "{name: eval_loss, id: other, every: 4, max_batches: 3}",)))[("gelu", 7)]
    other = [v for _, m, _, v in run_cell(renamed).series if m == "other.value"]
    assert other != [v for _, m, _, v in _series(a, "held_out.")]


def test_renaming_editing_and_growing_the_suite_changes_no_number(tmp_path):
    before = _by_key(_cells(tmp_path))
    after = _by_key(_cells(
        tmp_path, "after.yaml", activations=("relu", "silu", "gelu"),
        **{"name: streams": "name: renamed",
           "description: paired-seed checks": "description: another text\n"
           "claims:\n  - {id: c, statement: s, metric: loss.train, expect: '< 9', kind: sanity}\n"
           "leaderboard: {metrics: [{key: loss.train}]}"}))
    assert set(before) < set(after)
    for key in [("relu", 3), ("gelu", 7)]:
        assert before[key].id != after[key].id  # the suite's name is part of the resume key
        old, new = run_cell(before[key]), run_cell(after[key])
        assert old.status == "complete", old.traceback
        assert old.series == new.series and old.batch_digest == new.batch_digest


def _digest(t: torch.Tensor) -> float:
    """An exact fingerprint of a tensor's bytes, as a float that the store keeps exactly."""
    raw = t.detach().cpu().contiguous().numpy().tobytes()
    return float(int.from_bytes(hashlib.sha256(raw).digest()[:6], "little"))


class Fingerprint(Metric):
    """Fingerprints of the batch, the views and the backbone weights at each evaluation."""

    def __call__(self, ctx):
        weights = torch.cat([p.flatten() for p in ctx.arm.backbone.parameters()])
        return {"batch": _digest(ctx.batch.index), "views": _digest(torch.cat(ctx.views)),
                "backbone": _digest(weights)}


class FingerprintPlugin:
    @hookimpl
    def register_metrics(self, register):
        register("fingerprint", lambda p, ctx: Fingerprint(p), params=MetricParams)


def test_cells_of_one_trial_seed_are_paired(tmp_path):
    reg = load_registry((FingerprintPlugin(),))
    cells = _by_key(_cells(tmp_path, metrics=("{name: fingerprint, every: 5}",), reg=reg))
    runs = {key: run_cell(cell, reg) for key, cell in cells.items()}

    def prints(key, fld):
        return [(s, v) for _, m, s, v in runs[key].series if m == f"fingerprint.{fld}"]

    for fld in ("batch", "views"):  # every evaluated step: 0, 5, 10, 12
        assert prints(("relu", 3), fld) == prints(("gelu", 3), fld)
        assert len(prints(("relu", 3), fld)) == 4
        assert prints(("relu", 3), fld)[0] != prints(("relu", 7), fld)[0]
    start = prints(("relu", 3), "backbone")[0]
    assert start == prints(("gelu", 3), "backbone")[0]  # identical initial backbone
    assert start != prints(("relu", 7), "backbone")[0]
    assert prints(("relu", 3), "backbone")[-1] != prints(("gelu", 3), "backbone")[-1]
    assert runs[("relu", 3)].batch_digest == runs[("gelu", 3)].batch_digest


def test_duplicate_trial_seeds_and_metric_ids_are_errors(tmp_path):
    for replace, words in [({"seeds: [3, 7]": "seeds: [3, 7, 3]"}, "seeds: trial seed 3"),
                           ({}, "metrics[1].id: metric id 'held_out' is used twice")]:
        metrics = (EVAL, NCCC) if replace else (EVAL, EVAL.replace("every: 4", "every: 2"))
        try:
            _cells(tmp_path, metrics=metrics, **replace)
        except SuiteError as exc:
            assert words in str(exc), exc
        else:
            raise AssertionError("expected a SuiteError")



class Recorder(Metric):
    """Counts the training steps it was told of; reports the last one's batch fingerprint."""

    def __init__(self, params):
        super().__init__(params)
        self.seen: list[tuple[int, float]] = []

    def observe(self, event):
        assert event.lr == event.optimizer.param_groups[0]["lr"]
        self.seen.append((event.step, _digest(event.batch.index)))

    def __call__(self, ctx):
        last = self.seen[-1][1] if self.seen else float("nan")
        return {"observed": float(len(self.seen)), "last_batch": last}


def test_observing_metrics_see_every_step_after_its_update(tmp_path):
    class Plugin:
        @hookimpl
        def register_metrics(self, register):
            register("fingerprint", lambda p, ctx: Fingerprint(p), params=MetricParams)
            register("recorder", lambda p, ctx: Recorder(p), params=MetricParams)

    reg = load_registry((Plugin(),))
    metrics = ("{name: fingerprint, every: 1}", "{name: recorder, every: 1}")
    cell = _cells(tmp_path, metrics=metrics, activations=("relu",), reg=reg)[0]
    result = run_cell(cell, reg)
    assert result.status == "complete", result.error

    def series(key):
        return {s: v for _, m, s, v in result.series if m == key}

    assert series("recorder.observed") == {s: float(s) for s in range(13)}
    trained = series("fingerprint.batch")  # the batch each step trains on, seen before it
    told = series("recorder.last_batch")  # the batch the last event carried, seen after it
    assert all(told[s + 1] == trained[s] for s in range(12))
