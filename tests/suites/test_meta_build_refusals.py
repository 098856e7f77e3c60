"""Designs refused at validation that need a file or a plugin to show (the rest are in
tests/suites/hostile): a checkpoint that does not fit the data, rotations of non-square
images. And the meta-device layout they rest on, against a real build of the same arm."""

from __future__ import annotations

from pathlib import Path

import pytest
import timm
import torch

from geobench import hookimpl
from geobench.contract.interfaces import Arm, BuildContext
from geobench.contract.manager import load_registry, registry
from geobench.contract.meta_build import arm_layout
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError
from tests.data.helpers import data

SUITE = """\
name: refusals
base:
  data: DATA
  augment: AUGMENT
  backbone: BACKBONE
  head: {name: identity}
  objective: {name: ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 2, device: cpu}
  metrics: METRICS
"""


def suite(tmp_path: Path, data: str = "{name: digits, size: 16, n_train: 64, batch_size: 8}",
          augment: str = "{name: none}", backbone: str = "{name: mlp, depth: 2, width: 8}",
          metrics: str = "[]") -> Path:
    path = tmp_path / "refusals.yaml"
    path.write_text(SUITE.replace("DATA", data).replace("AUGMENT", augment)
                    .replace("BACKBONE", backbone).replace("METRICS", metrics))
    return path


def refusal(path: Path, reg=None) -> str:
    with pytest.raises(SuiteError) as err:
        Study(load_suite(path), reg or registry())
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}:")
    return message


def test_a_checkpoint_for_other_channels_is_refused(tmp_path):
    weights = tmp_path / "rgb.pt"
    torch.save(timm.create_model("resnet18", num_classes=10, in_chans=3).state_dict(), weights)
    message = refusal(suite(tmp_path, backbone="{name: timm, model: resnet18, "
                                               f"checkpoint: {weights}}}"))
    assert "backbone.name: backbone 'timm' needs data it can take" in message
    assert "size mismatch for conv1.weight" in message and "[64, 1, 7, 7]" in message


def test_a_checkpoint_with_another_class_count_fits(tmp_path):
    """The classifier of a checkpoint is not part of the backbone (timm's ``classifier``), so
    a checkpoint for 10 classes fits data of 3."""
    weights = tmp_path / "ten.pt"
    torch.save(timm.create_model("resnet18", num_classes=10, in_chans=1).state_dict(), weights)
    path = suite(tmp_path, data="{name: digits, size: 16, n_train: 64, batch_size: 8, "
                                "classes: 3}",
                 backbone=f"{{name: timm, model: resnet18, checkpoint: {weights}}}")
    assert len(Study(load_suite(path), registry()).cells) == 1


class WideImages:
    """A plugin dataset of 8 x 12 images that declares its input shape."""

    @staticmethod
    @hookimpl
    def register_datasets(register):
        from geobench.params import DataParams

        register("wide_images", lambda params, ctx: None, params=DataParams,
                 gives={"input": "image", "input_shape": (1, 8, 12), "classes": 2})


@pytest.mark.parametrize(("augment", "metrics", "fragment"), [
    ("{name: none}", "[{name: guillotine, augmentation: rotation}]",
     "metric 'guillotine' needs square images (C, S, S) for augmentation: rotation; "
     "data 'wide_images' gives input_shape = (1, 8, 12)"),
    ("{name: simclr, rot90_p: 0.5}", "[]",
     "augmentation 'simclr' needs square images to rotate (rot90_p 0.5)"),
])
def test_rotating_non_square_images_is_refused(tmp_path, augment, metrics, fragment):
    reg = load_registry(extra_plugins=(WideImages,))
    path = suite(tmp_path, data="{name: wide_images, batch_size: 8}", augment=augment,
                 metrics=metrics)
    assert fragment in refusal(path, reg)


def test_the_meta_layout_is_the_built_arms(tmp_path):
    """Names, shapes and trainability of every parameter, as a real build of the arm on the
    CPU has them (resnet_tiny, a 2-layer head, CE's classifier over 3 classes)."""
    path = suite(tmp_path, data="{name: digits, size: 16, n_train: 64, batch_size: 8, "
                                "classes: 3}",
                 backbone="{name: resnet_tiny}")
    path.write_text(path.read_text().replace("{name: identity}",
                                             "{name: mlp, hidden: 12, out: 6}"))
    reg = registry()
    spec = next(iter(Study(load_suite(path), reg).cells[0].specs.values()))
    layout = arm_layout(reg, spec, (1, 16, 16), 3)
    dataset = data({"name": "digits", "size": 16, "n_train": 64, "batch_size": 8,
                    "classes": 3})
    ctx = BuildContext(seed=0, device=torch.device("cpu"), data=dataset, registry=reg)
    backbone = reg.create("backbones", spec.backbone, ctx)
    ctx.feature_dim = backbone.feature_dim
    head = reg.create("heads", spec.head, ctx)
    ctx.embed_dim = head.out_dim
    arm = Arm(backbone, head, reg.create("objectives", spec.objective, ctx))
    real = tuple((n, tuple(p.shape), p.requires_grad) for n, p in arm.named_parameters())
    assert layout.error is None and layout.parameters == real
    assert any(n.startswith("objective.") and s[0] == 3 for n, s, _ in real)


class RaisingHeads:
    """Heads that fail for the backbone they are given: in their forward pass, or when
    built."""

    @staticmethod
    @hookimpl
    def register_heads(register):
        from torch import nn

        class Narrow(nn.Module):
            out_dim = 4

            def forward(self, z):
                raise ValueError(f"toy_narrow takes 4 features, got {z.shape[1]}")

        def refuse(params, ctx):
            raise ValueError(f"toy_refusing needs an even feature width, got {ctx.feature_dim}")

        class Reading(nn.Module):
            out_dim = 9

            def forward(self, z):  # reads values: fine on a real device, not on the meta one
                return z / float(z.abs().max())

        register("toy_narrow", lambda params, ctx: Narrow(), doc="raises in forward")
        register("toy_refusing", refuse, doc="raises when built")
        register("toy_reading", lambda params, ctx: Reading(), doc="reads its input's values")


@pytest.mark.parametrize(("head", "error"), [
    ("toy_narrow", "toy_narrow takes 4 features, got 9"),
    ("toy_refusing", "toy_refusing needs an even feature width, got 9"),
])
def test_a_head_that_raises_for_the_backbone_is_refused(tmp_path, head, error):
    path = suite(tmp_path, backbone="{name: mlp, depth: 2, width: 9}")
    arms = f"arms:\n  plain: {{}}\n  mine: {{head: {{name: {head}}}}}\n"
    path.write_text(path.read_text() + arms)
    assert refusal(path, load_registry(extra_plugins=(RaisingHeads,))) == (
        f"{path}:13: arms.mine.head.name: head {head!r} of arm 'mine' needs to build and run "
        f"on the backbone's features (run on the meta device); {error}")


def test_a_head_that_only_the_meta_device_cannot_run_is_left_to_the_run(tmp_path):
    path = suite(tmp_path, backbone="{name: mlp, depth: 2, width: 9}")
    path.write_text(path.read_text().replace("{name: identity}", "{name: toy_reading}"))
    cells = Study(load_suite(path), load_registry(extra_plugins=(RaisingHeads,))).cells
    assert len(cells) == 1


class ScaledBackbone:
    """A backbone that reads the data's values when it is built (meta tensors have none)."""

    @staticmethod
    @hookimpl
    def register_backbones(register):
        from torch import nn

        def build(params, ctx):
            scale = float(ctx.data.train_x.abs().max())
            net = nn.Sequential(nn.Flatten(), nn.Linear(256, 9))
            net.feature_dim = 9
            net[1].weight.data.div_(scale)
            return net

        register("toy_scaled", build, doc="reads the data when built")


def test_a_head_is_not_blamed_for_a_backbone_the_meta_device_cannot_build(tmp_path):
    path = suite(tmp_path, backbone="{name: toy_scaled}")
    path.write_text(path.read_text().replace("{name: identity}", "{name: toy_narrow}"))
    reg = load_registry(extra_plugins=(ScaledBackbone, RaisingHeads))
    assert len(Study(load_suite(path), reg).cells) == 1


INIT_MAPS = """\
name: init_maps
base:
  data: {name: gaussian_mixture, dim: 8, n_train: 64, batch_size: 16, num_classes: 4}
  augment: {name: none}
  backbone: {name: mlp, depth: 2, width: 8, bias: false}
  head: {name: identity}
  objective: {name: ce}
  init: {name: collapse, eps: 0.1, mode: affine}
  optimizer:
    name: mirror_descent
    lr: 0.1
    maps:
      PATTERN: {name: euclidean}
      "*": {name: pnorm, p: 3}
  train: {steps: 2, device: cpu}
"""

RUNS = {  # designs that run, each near a refusal
    "an init that wraps the backbone renames its parameters":
        INIT_MAPS.replace("PATTERN", "backbone.affine.*"),
    "a catch-all map that no parameter gets has no say in the degree": """\
name: star
base:
  data: {name: linear_teacher, dim: 8, n_train: 64, batch_size: 16}
  augment: {name: none}
  backbone: {name: mlp, depth: 2, width: 8, out_dim: 1, bias: false}
  head: {name: identity}
  objective: {name: logistic}
  optimizer:
    name: mirror_descent
    lr: 0.1
    maps:
      backbone.*: {name: pnorm, p: 3}
      "*": {name: euclidean}
  train: {steps: 2, device: cpu}
  metrics:
  - {name: horizon}
""",
    "weight_distance needs as many entries, not the same names": """\
name: names
base:
  data: {name: digits, size: 8, n_train: 64, batch_size: 8}
  augment: {name: none}
  backbone: {name: mlp, depth: 2, width: 16}
  objective: {name: ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 2, device: cpu}
  metrics:
  - {name: weight_distance}
arms:
  linear: {head: {name: linear, out: 8, bias: true}}
  mlp1: {head: {name: mlp, depth: 1, out: 8}}
""",
}


@pytest.mark.parametrize("text", list(RUNS.values()), ids=list(RUNS))
def test_designs_that_run_validate_and_run(text, tmp_path):
    from geobench.run.runner import run_cell

    path = tmp_path / "runs.yaml"
    path.write_text(text)
    cell = Study(load_suite(path), registry()).cells[0]
    result = run_cell(cell, registry())
    assert result.status.value == "complete", result.error


def test_a_pattern_an_init_renames_away_is_refused(tmp_path):
    path = tmp_path / "gone.yaml"
    path.write_text(INIT_MAPS.replace("PATTERN", "backbone.layers.*"))
    assert "map pattern(s) ['backbone.layers.*'] match no parameter; parameters: " \
           "backbone.backbone.layers.0.weight" in refusal(path)


class CountingObjective:
    """An objective that reads the labels' values when it is built (meta tensors have none)."""

    @staticmethod
    @hookimpl
    def register_objectives(register):
        from torch import nn

        from geobench.api import Objective
        from geobench.params import EmptyParams

        class Prior(Objective):
            n_views = 1

            def __init__(self, ctx):
                super().__init__()
                counts = torch.bincount(ctx.data.train_y, minlength=ctx.data.num_classes)
                self.register_buffer("log_prior", (counts / counts.sum()).log())
                self.classifier = nn.Linear(ctx.embed_dim, ctx.data.num_classes)

            def forward(self, arm, batch, views):
                logits = self.classifier(arm.embed(batch.x)) + self.log_prior
                return nn.functional.cross_entropy(logits, batch.y)

        register("prior_ce", lambda p, ctx: Prior(ctx), params=EmptyParams)


def test_an_objective_the_meta_device_cannot_build_is_not_refused(tmp_path):
    """Its layout is unknown, so the backbone's need holds: the run decides."""
    path = suite(tmp_path, backbone="{name: resnet_tiny}")
    path.write_text(path.read_text().replace("{name: ce}", "{name: prior_ce}"))
    reg = load_registry(extra_plugins=(CountingObjective,))
    assert len(Study(load_suite(path), reg).cells) == 1
