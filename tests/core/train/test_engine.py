import contextlib
import dataclasses
import math

import pytest
import torch

from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell
from tests.core.suite_text import small_suite


@pytest.fixture
def cells(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(small_suite(steps=20))
    return Study(load_suite(path), registry()).cells


def test_same_cell_twice_gives_identical_numbers(cells):
    first, second = run_cell(cells[0]), run_cell(cells[0])
    assert first.status == "complete", first.traceback
    assert first.finals == second.finals
    assert first.series == second.series
    assert first.batch_digest == second.batch_digest


def test_typed_specs_equal_validating_the_record_again(cells):
    reg = registry()
    for cell in cells:
        for arm, spec in cell.specs.items():
            record = cell.arms[arm]
            for key in ("data", "augment", "backbone", "head", "objective", "optimizer"):
                kind = {"data": "datasets", "augment": "augmentations"}.get(key, key + "s")
                assert getattr(spec, key).params == reg.validate(kind, record[key])
            assert spec.train.model_dump(mode="json") == record["train"]


def test_a_cell_without_typed_specs_fails_with_a_clear_error(cells):
    result = run_cell(dataclasses.replace(cells[0], specs={}))
    assert result.status == "failed"
    assert "has no typed spec for each arm: build cells with geobench.suite.expand" in (
        result.error)


def test_cells_differ_by_seed_and_ids_are_stable(cells, tmp_path):
    assert len(cells) == 4 and len({c.id for c in cells}) == 4
    again = Study(load_suite(tmp_path / "small.yaml"), registry()).cells
    assert [c.id for c in again] == [c.id for c in cells]
    a, b = run_cell(cells[0]), run_cell(cells[1])
    assert cells[0].varied["trial_seed"] != cells[1].varied["trial_seed"]
    assert a.batch_digest != b.batch_digest


def test_lockstep_arms_train_identically_when_specs_match(tmp_path):
    text = small_suite(steps=12).replace("grid:\n  optimizer.lr: [0.05, 0.1]\n", "")
    text += "arms:\n  a: {}\n  b: {}\n"
    (tmp_path / "arms.yaml").write_text(text)
    cell = Study(load_suite(tmp_path / "arms.yaml"), registry()).cells[0]
    result = run_cell(cell)
    assert result.status == "complete", result.traceback
    # identical initial weights, batches and views -> identical trajectories, step for step
    a = [(m, s, v) for arm, m, s, v in result.series if arm == "a"]
    b = [(m, s, v) for arm, m, s, v in result.series if arm == "b"]
    assert a == b and len(a) > 0
    assert result.finals["a/nccc.accuracy"] == result.finals["b/nccc.accuracy"]


def test_divergence_ends_the_cell_with_its_step(tmp_path):
    text = small_suite(steps=40, lrs=(1e12,)).replace("device: cpu}",
                                                      "device: cpu, max_loss_ratio: null}")
    (tmp_path / "d.yaml").write_text(text)  # only the non-finite rule
    cell = Study(load_suite(tmp_path / "d.yaml"), registry()).cells[0]
    result = run_cell(cell)
    assert result.status == "diverged"
    assert result.error.startswith("non-finite loss ")
    step = int(result.error.split("step ")[1].split()[0])
    losses = [v for _, m, s, v in result.series if m == "loss.train"]
    assert all(math.isfinite(v) for v in losses) and step < 40


def test_global_rng_untouched_by_metric_schedule(tmp_path):
    """Metrics save and restore the global RNG, so adding a metric leaves training alone."""
    plain = small_suite(steps=15).replace("    - {name: nccc, every: 10}\n",
                                          "    - {name: nccc}\n")
    busy = small_suite(steps=15).replace("every: 10", "every: 1")
    cells = []
    for name, text in (("plain", plain), ("busy", busy)):
        (tmp_path / f"{name}.yaml").write_text(text)
        cells.append(Study(load_suite(tmp_path / f"{name}.yaml"), registry()).cells[0])
    same_seed = dataclasses.replace(cells[1], id=cells[0].id)
    results = [run_cell(cells[0]), run_cell(same_seed)]
    losses = [[v for _, m, _, v in r.series if m == "loss.train"] for r in results]
    assert losses[0] == losses[1]


def _losses(result) -> list[float]:
    return [v for _, m, _, v in result.series if m == "loss.train"]


@pytest.mark.slow
def test_fast_path_options_train_on_cpu(tmp_path):
    """bf16 autocast and torch.compile (with its eager fallback) train to finite, falling
    losses; fp32 metrics stay comparable."""
    text = small_suite(steps=40, lrs=(0.1,)).replace(
        "device: cpu}", "device: cpu, precision: bf16, compile: true, channels_last: true}")
    (tmp_path / "fast.yaml").write_text(text)
    result = run_cell(Study(load_suite(tmp_path / "fast.yaml"), registry()).cells[0])
    assert result.status == "complete", result.traceback
    losses = _losses(result)
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_run_matches_cpu(tmp_path):
    (tmp_path / "cpu.yaml").write_text(small_suite(steps=20, lrs=(0.1,)))
    (tmp_path / "gpu.yaml").write_text(small_suite(steps=20, lrs=(0.1,))
                                       .replace("device: cpu", "device: cuda"))
    cpu = Study(load_suite(tmp_path / "cpu.yaml"), registry()).cells[0]
    gpu = dataclasses.replace(Study(load_suite(tmp_path / "gpu.yaml"), registry()).cells[0],
                              id=cpu.id)  # same seed
    a, b = run_cell(cpu), run_cell(gpu)
    assert b.status == "complete" and b.device.startswith("cuda")
    assert a.batch_digest == b.batch_digest
    assert _losses(a) == pytest.approx(_losses(b), rel=1e-3, abs=1e-4)


def test_tf32_trains_like_fp32_on_the_cpu_and_metrics_run_in_full_precision(tmp_path,
                                                                            monkeypatch):
    """The CPU has no TF32 units, so ``precision: tf32`` must give fp32's numbers bit for bit
    there; the training step runs under TF32 settings, every metric under full precision,
    and torch's own settings are back after the cell."""
    from geobench.train import precision

    seen: list[tuple[str, bool, bool]] = []
    real = precision.fp32_matmuls

    @contextlib.contextmanager
    def recorded(kind):
        with real(kind):
            seen.append((kind, torch.backends.cuda.matmul.fp32_precision,
                         torch.backends.cudnn.allow_tf32))
            yield

    monkeypatch.setattr(precision, "fp32_matmuls", recorded)
    saved = torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.allow_tf32
    (tmp_path / "fp32.yaml").write_text(small_suite(steps=20, lrs=(0.1,)))
    (tmp_path / "tf32.yaml").write_text(small_suite(steps=20, lrs=(0.1,)).replace(
        "device: cpu}", "device: cpu, precision: tf32}"))
    fp32 = Study(load_suite(tmp_path / "fp32.yaml"), registry()).cells[0]
    tf32 = dataclasses.replace(Study(load_suite(tmp_path / "tf32.yaml"), registry()).cells[0],
                               id=fp32.id)
    a = run_cell(fp32)
    assert {s for s in seen} == {("ieee", "ieee", False)}  # fp32 steps: torch's defaults
    seen.clear()
    b = run_cell(tf32)
    assert a.status == b.status == "complete" and a.series == b.series
    assert seen.count(("tf32", "tf32", True)) == 20 and ("ieee", "ieee", False) in seen
    assert (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.allow_tf32) == saved
