"""Arms with ``replicate: k``: independent runs of one trial seed beside the lockstep arms."""

import torch

from geobench.contract.interfaces import BuildContext
from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.arm_run import ArmRun as _ArmRun
from geobench.train.engine import run_cell
from geobench.train.loader import batches
from geobench.train.schedules import total_steps
from geobench.train.streams import DATA, ORDER, SavedRng, global_rng, stream_seed
from tests.core.suite_text import small_suite


def _cell(tmp_path, arms: str, name: str = "r.yaml"):
    text = small_suite(steps=12).replace("grid:\n  optimizer.lr: [0.05, 0.1]\n", "")
    (tmp_path / name).write_text(text + "arms:\n" + arms)
    return Study(load_suite(tmp_path / name), registry()).cells[0]


def _series(result, arm):
    return [(m, s, v) for a, m, s, v in result.series if a == arm]


def test_replicate_runs_independently_and_leaves_lockstep_arms_alone(tmp_path, monkeypatch):
    cell = _cell(tmp_path, "  a: {}\n  b: {replicate: 1}\n  c: {}\n")
    seeds = []

    def recorded(data, seed, steps):
        seeds.append(seed)
        return batches(data, seed, steps)

    monkeypatch.setattr("geobench.train.engine.batches", recorded)
    result = run_cell(cell)
    trial = cell.trial_seed
    assert seeds == [stream_seed(trial, ORDER), stream_seed(trial, f"{ORDER}/replicate1")]
    assert result.status == "complete", result.traceback
    a, b, c = (_series(result, arm) for arm in "abc")
    assert a == c and len(a) > 0  # the lockstep pair is untouched by the replicate
    assert [v for *_, v in a] != [v for *_, v in b]
    alone = run_cell(_cell(tmp_path, "  b: {replicate: 1}\n  d: {replicate: 1}\n", "r1.yaml"))
    assert _series(alone, "b") == _series(alone, "d") == b  # whatever arms run beside it
    plain = run_cell(_cell(tmp_path, "  a: {}\n  c: {}\n", "plain.yaml"))
    assert _series(plain, "a") == a


def test_record_names_a_replicate_only_when_set(tmp_path):
    cell = _cell(tmp_path, "  a: {}\n  b: {replicate: 2}\n")
    assert "replicate" not in cell.arms["a"]  # cell ids of suites without replicates stay
    assert cell.arms["b"]["replicate"] == 2
    assert cell.specs["a"].replicate == 0 and cell.specs["b"].replicate == 2


def test_replicate_draws_weights_and_batches_from_its_own_streams(tmp_path):
    cell = _cell(tmp_path, "  a: {}\n  b: {replicate: 1}\n")
    reg, trial, spec = registry(), cell.trial_seed, cell.specs["b"]
    with global_rng(stream_seed(trial, DATA)):
        data = reg.create("datasets", spec.data, BuildContext(
            stream_seed(trial, DATA), torch.device("cpu"), spec=cell.arms["b"],
            trial_seed=trial))
    total = total_steps(spec.train, data)
    runs = {name: _ArmRun(name, cell.arms[name], cell.specs[name], reg, trial,
                          torch.device("cpu"), data, total) for name in ("a", "b")}
    ctx = BuildContext(stream_seed(trial, "init/backbone/replicate1"), torch.device("cpu"),
                       data, spec=cell.arms["b"], trial_seed=trial)
    with global_rng(ctx.seed):
        expected = reg.create("backbones", spec.backbone, ctx)
    got = runs["b"].arm.backbone.state_dict()
    assert all(torch.equal(got[k], v) for k, v in expected.state_dict().items())
    a_first = next(iter(runs["a"].arm.backbone.parameters()))
    assert not torch.equal(a_first, next(iter(runs["b"].arm.backbone.parameters())))
    own = next(batches(data, stream_seed(trial, f"{ORDER}/replicate1"), 1)).index
    shared = next(batches(data, stream_seed(trial, ORDER), 1)).index
    assert not torch.equal(own, shared)


def test_replicate_draws_training_randomness_from_its_own_stream(tmp_path, monkeypatch):
    """Each step's global-RNG draws (dropout and the like): the replicate's come from
    ``train/replicate1``, and the lockstep arms' are the same with or without it."""
    draws: dict[str, list[float]] = {}
    original = _ArmRun.step

    def step(self, batch, views, step, total):
        draws.setdefault(self.name, []).append(float(torch.rand(1)))
        return original(self, batch, views, step, total)

    monkeypatch.setattr(_ArmRun, "step", step)
    cell = _cell(tmp_path, "  a: {}\n  b: {replicate: 1}\n  c: {}\n")
    run_cell(cell)
    with_replicate = dict(draws)
    draws.clear()
    run_cell(_cell(tmp_path, "  a: {}\n  c: {}\n", "plain.yaml"))
    assert with_replicate["a"] == draws["a"] and with_replicate["c"] == draws["c"]
    own = torch.Generator().manual_seed(stream_seed(cell.trial_seed, "train/replicate1"))
    assert with_replicate["b"] == [float(torch.rand(1, generator=own)) for _ in range(12)]


def test_saved_rng_resumes_its_stream_and_leaves_the_global_one_alone():
    torch.manual_seed(0)
    outer = [float(torch.rand(1)) for _ in range(3)]
    torch.manual_seed(0)
    saved = SavedRng(123)
    got = [float(torch.rand(1))]
    with saved.active():
        inside = [float(torch.rand(1)) for _ in range(2)]
    got.append(float(torch.rand(1)))
    with saved.active():
        inside.append(float(torch.rand(1)))
    got.append(float(torch.rand(1)))
    assert got == outer
    ref = torch.Generator().manual_seed(123)
    assert inside == [float(torch.rand(1, generator=ref)) for _ in range(3)]
