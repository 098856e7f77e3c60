"""Per-arm divergence: an arm the guard finds diverged stops at its step, keeping what it
measured before, and the cell's other arms train on exactly as they would without it; a
non-finite gradient or buffer counts, named."""

import math

import torch

from geobench.contract.interfaces import Objective, Params
from geobench.contract.manager import load_registry
from geobench.contract.registry import EmptyParams, Entry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell
from tests.core.suite_text import small_suite


class NanAtParams(Params):
    at: int = 10**9


class NanAt(Objective):
    """Cross-entropy whose loss is NaN from step ``at`` on (so are the gradients and then
    the weights)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def forward(self, arm, batch, views):
        loss = torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)
        return loss * math.nan if batch.step >= self.at else loss


class PoisonBuffer(Objective):
    """Cross-entropy with a running statistic that becomes NaN after step 2 (weights and
    losses stay finite)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running_var", torch.ones(3))

    def forward(self, arm, batch, views):
        return torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)

    def after_step(self, arm, step, total_steps):
        if step == 2:
            self.running_var[0] = math.nan


class PoisonGrad(PoisonBuffer):
    """Cross-entropy whose first gradient is left NaN after step 9's update (the guard's
    check after step 9 sees it; step 10 would clear it)."""

    def after_step(self, arm, step, total_steps):
        if step == 9:
            next(arm.parameters()).grad.view(-1)[0] = math.nan


def _registry():
    reg = load_registry()
    reg.add(Entry("objectives", "nan_at", lambda p, ctx: NanAt(p.at), NanAtParams, "nan_at"))
    for name, cls in (("poison_buffer", PoisonBuffer), ("poison_grad", PoisonGrad)):
        reg.add(Entry("objectives", name, lambda p, ctx, cls=cls: cls(), EmptyParams, name))
    return reg


def _cell(tmp_path, reg, arms, steps=40):
    text = small_suite(steps=steps, lrs=(0.1,)).replace("seeds: 2", "seeds: 1")
    text = text.replace("every: 10", "every: 5").replace("{name: toy_ce}", "{name: nan_at}")
    if arms:
        text += "arms:\n" + "".join(f"  {name}: {body}\n" for name, body in arms.items())
    path = tmp_path / f"{'_'.join(arms) or 'single'}.yaml"
    path.write_text(text)
    return Study(load_suite(path), reg).cells[0]


def test_a_diverged_arm_stops_at_its_step_and_the_other_trains_on_unchanged(tmp_path):
    reg = _registry()
    both = run_cell(_cell(tmp_path, reg, {"good": "{}", "bad": "{objective: {at: 13}}"}), reg)
    alone = run_cell(_cell(tmp_path, reg, {}), reg)  # the good arm's spec, alone
    assert both.status == "complete" and alone.status == "complete", both.traceback
    assert both.arms["good"].status == "complete"
    bad = both.arms["bad"]
    assert (bad.status, bad.step) == ("diverged", 13)
    assert bad.error == "non-finite loss nan at step 13 (arm bad)"
    # the good arm: every value, series and final, as in a run without the bad arm
    good = [row[1:] for row in both.series if row[0] == "good"]
    assert good == [row[1:] for row in alone.series] and len(good) > 10
    assert {k: v for k, v in both.finals.items() if k.startswith("good/")} == {
        f"good/{k}": v for k, v in alone.finals.items()}
    assert max(step for _, step, _ in good) == 40
    # the bad arm keeps what it measured before step 13, nothing after
    kept = sorted({(key, step) for arm, key, step, _ in both.series if arm == "bad"})
    assert max(step for key, step in kept if key == "loss.train") == 12
    assert {step for key, step in kept if key.startswith("nccc.")} == {0, 5, 10}
    assert both.batch_digest == alone.batch_digest


def test_a_cell_whose_every_arm_diverged_is_diverged_with_the_first_reason(tmp_path):
    reg = _registry()
    cell = _cell(tmp_path, reg, {"a": "{objective: {at: 17}}", "b": "{objective: {at: 6}}"})
    result = run_cell(cell, reg)
    assert result.status == "diverged"
    assert result.error == "non-finite loss nan at step 6 (arm b)"
    assert {n: (a.status, a.step) for n, a in result.arms.items()} == {
        "a": ("diverged", 17), "b": ("diverged", 6)}


def test_non_finite_buffers_and_gradients_are_divergence_named(tmp_path):
    reg = _registry()
    # the guard checks before the metrics of step 5 and after step 9
    for name, what, seen in (("poison_buffer", "buffer objective.running_var", 5),
                             ("poison_grad", "gradient backbone.layers.0.weight", 10)):
        arms = {"ok": "{}", "hit": f"{{objective: {{name: {name}}}}}"}
        result = run_cell(_cell(tmp_path, reg, arms, steps=20), reg)
        assert result.status == "complete", result.traceback
        hit = result.arms["hit"]
        assert hit.status == "diverged" and hit.step == seen
        assert hit.error == f"non-finite {what} after step {seen - 1} (arm hit)"
        assert result.arms["ok"].status == "complete"


def test_no_metric_sees_an_arm_gone_non_finite_before_the_guard_checks_it(tmp_path):
    """An SVD of NaN features raises: the guard checks the arms before every metric step,
    not only every 10 steps, so the diverged arm is gone before effective_rank reads it."""
    reg = _registry()
    text = small_suite(steps=30, lrs=(0.1,)).replace("seeds: 2", "seeds: 1")
    text = text.replace("{name: toy_ce}", "{name: nan_at}").replace(
        "- {name: nccc, every: 10}", "- {name: effective_rank, every: 5, samples: 16}")
    text = text.replace("nccc.accuracy", "effective_rank.erank")
    text += "arms:\n  good: {}\n  bad: {objective: {at: 13}}\n"
    (tmp_path / "rank.yaml").write_text(text)
    result = run_cell(Study(load_suite(tmp_path / "rank.yaml"), reg).cells[0], reg)
    assert result.status == "complete", result.traceback
    assert (result.arms["bad"].status, result.arms["bad"].step) == ("diverged", 13)
    assert max(s for arm, key, s, _ in result.series
               if arm == "good" and key == "effective_rank.erank") == 30


def test_the_first_arm_diverging_stops_the_cross_arm_values_not_the_other_arms(tmp_path):
    reg = _registry()
    text = small_suite(steps=30, lrs=(0.1,)).replace("seeds: 2", "seeds: 1")
    text = text.replace("{name: toy_ce}", "{name: nan_at}").replace(
        "- {name: nccc, every: 10}", "- {name: nccc, every: 5}\n    - {name: toy_cka, every: 5}")
    text += "arms:\n  ref: {objective: {at: 13}}\n  b: {}\n  c: {}\n"
    (tmp_path / "ref.yaml").write_text(text)
    result = run_cell(Study(load_suite(tmp_path / "ref.yaml"), reg).cells[0], reg)
    assert result.status == "complete", result.traceback
    steps = {}
    for arm, key, step, _ in result.series:
        steps.setdefault((arm, key.split(".")[0]), set()).add(step)
    assert max(steps[("ref~b", "toy_cka")]) == max(steps[("ref~c", "toy_cka")]) == 10
    assert max(steps[("b", "nccc")]) == max(steps[("c", "nccc")]) == 30
    assert max(steps[("ref", "nccc")]) == 10
