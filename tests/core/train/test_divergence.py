"""The divergence guard: a non-finite loss or parameter, or a loss above ``max_loss_ratio``
times the initial loss at any step, ends the cell as ``diverged`` — even if it recovers."""

import math

import torch

from geobench.contract.interfaces import Objective
from geobench.contract.manager import load_registry
from geobench.contract.registry import EmptyParams, Entry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.divergence import DivergenceGuard
from geobench.train.engine import run_cell
from tests.core.suite_text import small_suite


class SpikeCE(Objective):
    """Cross-entropy whose reported value is 1e6 times larger at step 4 only (the gradient
    is the plain one, so training goes on as if nothing happened: the loss comes back)."""

    def forward(self, arm, batch, views):
        loss = torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)
        if batch.step == 4:
            return loss + (1e6 - 1) * loss.detach()
        return loss


class PoisonAfterLastStep(Objective):
    """Cross-entropy; after step 2 one weight becomes NaN (no later loss sees it)."""

    def forward(self, arm, batch, views):
        return torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)

    def after_step(self, arm, step, total_steps):
        if step == 2:
            with torch.no_grad():
                next(arm.parameters()).view(-1)[0] = math.nan


def _registry():
    reg = load_registry()
    for name, cls in (("spike_ce", SpikeCE), ("poison_ce", PoisonAfterLastStep)):
        reg.add(Entry("objectives", name, lambda p, ctx, cls=cls: cls(), EmptyParams, name))
    return reg


def _cell(tmp_path, reg, text):
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("seeds: 2", "seeds: 1"))
    return Study(load_suite(path), reg).cells[0]


def test_a_loss_spike_that_recovers_still_ends_the_cell_as_diverged(tmp_path):
    reg = _registry()
    text = small_suite(steps=30, lrs=(0.1,)).replace("{name: toy_ce}", "{name: spike_ce}")
    text = text.replace("every: 10", "every: 2")
    result = run_cell(_cell(tmp_path, reg, text), reg)
    assert result.status == "diverged", result.traceback
    first = 1.1  # about ln 3 for 3 classes at initialisation
    assert result.error.startswith("loss ") and "at step 4 exceeds max_loss_ratio 10000" in (
        result.error)
    spike = float(result.error.split()[1])
    assert 1e5 * first < spike < 1e7 * first
    logged = [step for arm, key, step, _ in result.series if key == "loss.train"]
    assert max(logged) == 3  # nothing recorded from the diverged step on
    probed = [step for arm, key, step, _ in result.series if key.startswith("nccc.")]
    assert probed == [0, 2]
    at_2 = [v for _, key, step, v in result.series if key == "nccc.accuracy" and step == 2]
    assert result.finals["nccc.accuracy"] == at_2[0]  # the last value before the divergence

    off = text.replace("device: cpu}", "device: cpu, max_loss_ratio: null}")
    assert run_cell(_cell(tmp_path, reg, off), reg).status == "complete"


def test_a_real_finite_blow_up_is_diverged_with_step_and_value(tmp_path):
    reg = _registry()
    result = run_cell(_cell(tmp_path, reg, small_suite(steps=40, lrs=(10.0,))), reg)
    assert result.status == "diverged"
    value = float(result.error.split()[1])
    assert math.isfinite(value) and value > 1e4 * math.log(3) * 0.9
    assert " at step " in result.error and "(arm main)" in result.error


def test_non_finite_parameters_end_the_cell_even_with_finite_losses(tmp_path):
    reg = _registry()
    text = small_suite(steps=3, lrs=(0.1,)).replace("{name: toy_ce}", "{name: poison_ce}")
    result = run_cell(_cell(tmp_path, reg, text), reg)
    assert result.status == "diverged"
    assert result.error == "non-finite parameter backbone.layers.0.weight after step 2 (arm main)"


def test_the_ratio_rule_floors_an_initial_loss_near_zero():
    guard = DivergenceGuard(1e4)
    assert guard.loss("a", 0, 0.004) is None  # SimSiam's -cos starts near 0 ...
    assert guard.loss("a", 50, -0.99) is None  # ... and trains towards -1: no blow-up
    assert "exceeds max_loss_ratio 10000 x the initial loss 0.01" in guard.loss("a", 60, 101.0)
    assert guard.loss("b", 0, 2.3) is None
    assert guard.loss("b", 1, 2.3e4) is None and guard.loss("b", 2, 2.31e4) is not None
    assert DivergenceGuard(None).loss("c", 5, 1e30) is None
    assert DivergenceGuard(None).loss("c", 6, math.inf).startswith("non-finite loss inf")
