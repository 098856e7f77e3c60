"""The GPU fast path (run by scripts/gpu_check.sh; skipped without CUDA).

- A training step never waits for the device: batches, augmentations (their parameters are
  drawn on the CPU), the contrastive loss and the optimizers (SGD, MirrorDescent eager and
  compiled) run under ``torch.cuda.set_sync_debug_mode("error")``, which raises at any
  synchronising call.
- The fast options train like fp32 eager: the engine's training losses on the same batches
  agree within a stated tolerance per option.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from geobench_mirror import MirrorDescent, maps

from geobench.contract.interfaces import Arm, BuildContext
from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell
from geobench.train.loader import batches

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

SIMCLR = """\
name: fast
base:
  data: {name: digits, size: 16, channels: 3, batch_size: 64}
  augment: {name: simclr}
  backbone: {name: timm, model: resnet18, cifar_stem: true}
  head: {name: mlp, depth: 2, hidden: 64, out: 32}
  objective: {name: cl, tau: 0.5}
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
  train: {steps: 30, device: cuda, OPTIONS}
"""
# Relative tolerance on each logged training loss, against fp32 eager on the same batches
# and views: bf16 rounds activations to 8 bits of mantissa; TF32 rounds matmul inputs to 10
# bits (fp32 already convolves in TF32); compile and channels-last reorder fp32 sums only.
TOLERANCE = {"precision: bf16": 5e-2, "precision: tf32": 2e-2, "compile: true": 2e-3,
             "channels_last: true": 2e-3,
             "precision: bf16, channels_last: true, compile: true": 5e-2}


def _losses(folder, options: str, like=None) -> tuple[list[float], object]:
    path = folder / "fast.yaml"
    path.write_text(SIMCLR.replace("OPTIONS", options))
    cell = Study(load_suite(path), registry()).cells[0]
    if like is not None:
        cell = dataclasses.replace(cell, id=like.id)
    result = run_cell(cell)
    assert result.status == "complete", result.traceback
    return [v for _, key, _, v in result.series if key == "loss.train"], cell


@pytest.fixture(scope="module")
def fp32_eager(tmp_path_factory):
    """The reference run, once for every option."""
    return _losses(tmp_path_factory.mktemp("fp32"), "precision: fp32")


@pytest.mark.parametrize("options", list(TOLERANCE))
def test_fast_options_train_like_fp32_eager(tmp_path, options, fp32_eager):
    reference, cell = fp32_eager
    fast, _ = _losses(tmp_path, options, like=cell)
    assert fast == pytest.approx(reference, rel=TOLERANCE[options])


def _optimizer(name: str, arm: Arm) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(arm.parameters(), lr=0.05, momentum=0.9)
    return MirrorDescent(arm.parameters(), lr=0.01, mirror_map=maps.hypentropy(1.0),
                         compile=name == "mirror compiled")


@pytest.mark.parametrize("augment", ["simclr", "byol"])
@pytest.mark.parametrize("optimizer", ["sgd", "mirror", "mirror compiled"])
def test_a_training_step_never_waits_for_the_device(augment, optimizer):
    reg, dev = registry(), torch.device("cuda")
    spec = {"name": "digits", "size": 16, "channels": 3, "batch_size": 32}
    data = reg.build("datasets", spec, BuildContext(0, torch.device("cpu"))).to(dev)
    ctx = BuildContext(0, dev, data)
    aug = reg.build("augmentations", {"name": augment}, ctx)
    backbone = reg.build("backbones", {"name": "timm", "model": "resnet18",
                                       "cifar_stem": True}, ctx)
    ctx.feature_dim = backbone.feature_dim
    head = reg.build("heads", {"name": "mlp", "depth": 2, "hidden": 64, "out": 32}, ctx)
    ctx.embed_dim = head.out_dim
    arm = Arm(backbone, head, reg.build("objectives", {"name": "cl", "tau": 0.5}, ctx)).to(dev)
    opt = _optimizer(optimizer, arm)
    gen = torch.Generator().manual_seed(0)
    steps = batches(data, 0, 5)

    def step() -> None:
        batch = next(steps)
        views = [aug(batch.x, batch.index, gen, view=v) for v in range(2)]
        opt.zero_grad(set_to_none=True)
        arm.objective(arm, batch, views).backward()
        opt.step()

    step()  # the first step sets up cuDNN, the allocator and (compiled) the update
    step()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
