"""``guillotine``: read-out accuracy of backbone features vs head outputs.

Class probe.  The same probe (``geobench.geometry.probes``: linear probe, k-NN or nearest
class centre) is fitted on the first ``max_train`` training samples and scored on the
held-out split, once on backbone representations f(x) and once on head outputs h(f(x)), the
arm in evaluation mode.  ``gap`` = backbone_accuracy - head_accuracy (P1's guillotine
effect: positive when cutting the head off helps).

Augmentation probe.  A head that discards the augmentation variable makes it harder to read
out: the same kind of probe is fitted to predict a discretised augmentation label on the
same ``max_train`` training samples and scored on the held-out samples, each transformed by
each of ``AUG_STEPS`` = 4 transformations (all four of every sample, so the labels are
balanced and chance is exactly 0.25; no random draws).  ``aug_gap`` =
backbone_aug_accuracy - head_aug_accuracy (> 0: the head discards the augmentation).

- ``rotation`` (images (N, C, H, W) with H == W; the authors' probe): the sample rotated by
  k * 90 degrees, ``torch.rot90`` (exact, no interpolation), label k in {0, 1, 2, 3}.
- ``action`` (datasets with an exact orbit structure, ``data.extras["orbit"]``, e.g.
  ``orbit_manifold``: latent u = (a, s_1..s_m), the torus acting by rotating each pair s_j,
  x = phi(u)).  Applying a group element to a sample at its own random orbit position would
  leave the label unreadable by any representation (positions are uniform on the circle, so
  the view's distribution does not depend on the element applied).  So, as the rotation
  probe starts from an upright image, each sample is first put at the orbit's canonical
  position (every pair s_j -> (|s_j|, 0); class part a unchanged), then moved by the k-th of
  four equally spaced group elements, theta_k = max_angle * (2k + 1 - 4) / 4 on every pair
  (the centres of four equal bins of the augmentation range [-max_angle, max_angle]; for
  max_angle = pi, the cyclic group of quarter turns, offset by 45 degrees): label k.
  It reads "where on its orbit is the sample" -- the augmentation variable.
- ``auto``: ``action`` when the data has such an orbit structure, ``rotation`` for square
  images, ``none`` otherwise (augmentation fields NaN).

Untrained-head baseline.  Any head, even a random one, can lose read-out accuracy; the
guillotine effect is the *training's* doing only where the trained head loses more than an
untrained one on the same backbone features.  The untrained head is a copy of the arm's head
with fresh weights (every submodule's ``reset_parameters``, torch's default initialisation,
seeded by the metric's own stream), its BatchNorm statistics recomputed on the probe's
training features (one pass in training mode, cumulative averages), evaluated on the CPU.
``gap_over_untrained`` = gap - untrained_gap = untrained_head_accuracy - head_accuracy (> 0:
the trained head discards more class information than an untrained one); the same for the
augmentation probe.

Selectivity.  Each probe's loss through the head relative to the backbone, as the share of
the backbone's accuracy above chance that the head loses: ``class_loss`` = gap /
(backbone_accuracy - 1/num_classes), ``aug_loss`` = aug_gap / (backbone_aug_accuracy - 1/4);
``selectivity`` = aug_loss - class_loss (> 0: the head discards the augmentation variable
more than the class).  A backbone at or below chance on a probe gives NaN.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Literal

import torch
from pydantic import Field
from torch import Tensor, nn

from geobench.api import Data, FieldDoc, Metric, MetricContext, MetricParams
from geobench.geometry.probes import knn_accuracy, linear_probe_accuracy, nccc_accuracy
from geobench.params import TEST_SPLIT, Need, has, square
from geobench_projection.metrics.common import features

AUG_STEPS = 4
Augmentation = Literal["auto", "rotation", "action", "none"]


class GuillotineParams(MetricParams):
    probe: Literal["linear", "knn", "nccc"] = Field("linear", description="read-out")
    k: int = Field(20, ge=1, description="neighbours of the knn probe")
    max_train: int = Field(2048, ge=1, description="training samples the probe is fitted on")
    augmentation: Augmentation = Field(
        "auto", description="augmentation probe: rotation (k*90 degrees of square images), "
        "action (4 group elements of an exact orbit structure), none, or auto (action with an "
        "orbit structure, rotation for square images, none otherwise)")


def has_action(data: Data) -> bool:
    """Whether ``data`` carries an orbit structure the action probe can use."""
    orbit = data.extras.get("orbit")
    return all(hasattr(orbit, name) for name in ("latent", "act", "map", "class_dim",
                                                 "pairs", "max_angle"))


def is_square_image(data: Data) -> bool:
    """Whether the inputs are (N, C, H, W) images with H == W."""
    return data.train_x.dim() == 4 and data.train_x.shape[-1] == data.train_x.shape[-2]


def resolve_augmentation(kind: Augmentation, data: Data) -> str:
    """The probe ``kind`` runs on ``data`` (``auto`` resolved); raises if it cannot run."""
    if kind == "auto":
        return "action" if has_action(data) else "rotation" if is_square_image(data) else "none"
    if kind == "action" and not has_action(data):
        raise ValueError("guillotine augmentation='action' needs an orbit structure "
                         "(data.extras['orbit'], e.g. orbit_manifold)")
    if kind == "rotation" and not is_square_image(data):
        raise ValueError("guillotine augmentation='rotation' needs square images (N, C, H, W), "
                         f"got inputs of shape {tuple(data.train_x.shape[1:])}")
    return kind


def action_angles(max_angle: float, steps: int = AUG_STEPS) -> Tensor:
    """The ``steps`` equally spaced angles max_angle * (2k + 1 - steps) / steps."""
    k = torch.arange(steps, dtype=torch.float64)
    return max_angle * (2 * k + 1 - steps) / steps


def action_views(orbit: Any, split: str, count: int | None, k: int) -> Tensor:
    """phi(g_k . canonical(u)) for the first ``count`` latents of ``split`` (all if None):
    every pair moved to (|s_j|, 0), then rotated by the k-th angle of ``action_angles``."""
    u = orbit.latent[split][:count].double()
    c = orbit.class_dim
    radius = u[:, c:].unflatten(-1, (orbit.pairs, 2)).norm(dim=-1)
    canonical = torch.stack((radius, torch.zeros_like(radius)), dim=-1).flatten(1)
    u = torch.cat((u[:, :c], canonical), dim=1)
    theta = action_angles(orbit.max_angle)[k].expand(len(u), orbit.pairs)
    return orbit.map(orbit.act(u, theta))


def augmented_features(ctx: MetricContext, kind: str, split: str,
                       count: int | None) -> tuple[Tensor, Tensor, Tensor]:
    """Backbone and head features (CPU) of every transformed sample, and its label k."""
    data = ctx.data
    source = data.train_x if split == "train" else data.test_x
    zs, hs, ys = [], [], []
    for k in range(AUG_STEPS):
        if kind == "rotation":
            x = torch.rot90(source[:count], k, dims=(-2, -1))
        else:
            x = action_views(data.extras["orbit"], split, count, k)
            x = x.to(source.device, source.dtype)
        z, h = features(ctx.arm, x)
        zs.append(z.cpu())
        hs.append(h.cpu())
        ys.append(torch.full((len(x),), k, dtype=torch.long))
    return torch.cat(zs), torch.cat(hs), torch.cat(ys)


def untrained_head(head: nn.Module, seed: int, z: Tensor) -> nn.Module:
    """A CPU copy of ``head`` with fresh weights (``reset_parameters`` of every submodule,
    under ``torch.manual_seed(seed)``), BatchNorm statistics recomputed on ``z`` (one pass,
    cumulative averages), in evaluation mode.  Raises if a module holding parameters cannot
    be reset."""
    fresh = copy.deepcopy(head).cpu()
    stuck = [type(m).__name__ for m in fresh.modules()
             if any(True for _ in m.parameters(recurse=False))
             and not hasattr(m, "reset_parameters")]
    if stuck:
        raise ValueError(f"guillotine: cannot re-initialise the head's {stuck[0]} (it has "
                         "parameters and no reset_parameters)")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for m in fresh.modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
    norms = [m for m in fresh.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one pass gives the batch's statistics
    if norms:
        with torch.no_grad():
            fresh.train()(z)
    return fresh.eval()


def loss_share(backbone: float, head: float, chance: float) -> float:
    """The share of the backbone's accuracy above ``chance`` that the head loses, NaN at or
    below chance."""
    above = backbone - chance
    return (backbone - head) / above if above > 0 else math.nan


class Guillotine(Metric):
    """Backbone and head read-out accuracies (class and augmentation) and their gaps."""

    params: GuillotineParams

    def score(self, xtr: Tensor, ytr: Tensor, xte: Tensor, yte: Tensor) -> float:
        if self.params.probe == "linear":
            return linear_probe_accuracy(xtr, ytr, xte, yte)
        if self.params.probe == "knn":
            return knn_accuracy(xtr, ytr, xte, yte, k=self.params.k)
        return nccc_accuracy(xtr, ytr, xte, yte)

    def accuracies(self, ztr: Tensor, htr: Tensor, ytr: Tensor, zte: Tensor, hte: Tensor,
                   yte: Tensor, untrained: nn.Module) -> tuple[float, float, float]:
        """Held-out probe accuracy on backbone features, trained-head and untrained-head
        outputs."""
        with torch.no_grad():
            utr, ute = untrained(ztr), untrained(zte)
        return (self.score(ztr, ytr, zte, yte), self.score(htr, ytr, hte, yte),
                self.score(utr.flatten(1), ytr, ute.flatten(1), yte))

    def augmentation_accuracies(self, ctx: MetricContext, n: int, seed: int
                                ) -> tuple[float, float, float]:
        """The augmentation probe's ``accuracies``, NaN with none."""
        kind = resolve_augmentation(self.params.augmentation, ctx.data)
        if kind == "none":
            return math.nan, math.nan, math.nan
        ztr, htr, ytr = augmented_features(ctx, kind, "train", n)
        zte, hte, yte = augmented_features(ctx, kind, "test", None)
        return self.accuracies(ztr, htr, ytr, zte, hte, yte,
                               untrained_head(ctx.arm.head, seed, ztr))

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        n = min(self.params.max_train, len(ctx.data.train_x))
        ztr, htr = (t.cpu() for t in features(ctx.arm, ctx.data.train_x[:n]))
        zte, hte = (t.cpu() for t in features(ctx.arm, ctx.data.test_x))
        ytr, yte = ctx.data.train_y[:n].cpu(), ctx.data.test_y.cpu()
        back, head, untr = self.accuracies(ztr, htr, ytr, zte, hte, yte,
                                           untrained_head(ctx.arm.head, ctx.seed, ztr))
        back_aug, head_aug, untr_aug = self.augmentation_accuracies(ctx, n, ctx.seed)
        class_loss = loss_share(back, head, 1 / ctx.data.num_classes)
        aug_loss = loss_share(back_aug, head_aug, 1 / AUG_STEPS)
        return {"backbone_accuracy": back, "head_accuracy": head, "gap": back - head,
                "untrained_head_accuracy": untr, "untrained_gap": back - untr,
                "gap_over_untrained": untr - head,
                "backbone_aug_accuracy": back_aug, "head_aug_accuracy": head_aug,
                "aug_gap": back_aug - head_aug, "untrained_head_aug_accuracy": untr_aug,
                "untrained_aug_gap": back_aug - untr_aug,
                "aug_gap_over_untrained": untr_aug - head_aug,
                "class_loss": class_loss, "aug_loss": aug_loss,
                "selectivity": aug_loss - class_loss}


GUILLOTINE_FIELDS = {
    "backbone_accuracy": FieldDoc("held-out accuracy of the probe on backbone representations",
                                  "fraction", "higher"),
    "head_accuracy": FieldDoc("held-out accuracy of the probe on head outputs", "fraction",
                              "higher"),
    "gap": FieldDoc("backbone minus head probe accuracy (> 0: cutting the head off helps)",
                    "fraction"),
    "backbone_aug_accuracy": FieldDoc(
        "held-out accuracy of the augmentation probe (which of 4 rotations / group elements; "
        "chance 0.25) on backbone representations (NaN: no augmentation probe)", "fraction"),
    "head_aug_accuracy": FieldDoc(
        "held-out accuracy of the augmentation probe (which of 4 rotations / group elements; "
        "chance 0.25) on head outputs (NaN: no augmentation probe)", "fraction"),
    "aug_gap": FieldDoc("backbone minus head augmentation-probe accuracy (> 0: the head "
                        "discards the augmentation variable)", "fraction"),
    "untrained_head_accuracy": FieldDoc(
        "held-out accuracy of the probe on an untrained head's outputs (the head's "
        "architecture, fresh weights, on the same backbone features)", "fraction"),
    "untrained_gap": FieldDoc("backbone minus untrained-head probe accuracy", "fraction"),
    "gap_over_untrained": FieldDoc(
        "gap minus untrained_gap = untrained-head minus trained-head probe accuracy (> 0: the "
        "trained head discards more class information than an untrained one)", "fraction"),
    "untrained_head_aug_accuracy": FieldDoc(
        "held-out accuracy of the augmentation probe on an untrained head's outputs (NaN: "
        "no augmentation probe)", "fraction"),
    "untrained_aug_gap": FieldDoc("backbone minus untrained-head augmentation-probe accuracy",
                                  "fraction"),
    "aug_gap_over_untrained": FieldDoc(
        "aug_gap minus untrained_aug_gap (> 0: the trained head discards more of the "
        "augmentation variable than an untrained one)", "fraction"),
    "class_loss": FieldDoc("gap / (backbone_accuracy - 1/num_classes): the share of the "
                           "backbone's above-chance class accuracy the head loses", "fraction"),
    "aug_loss": FieldDoc("aug_gap / (backbone_aug_accuracy - 1/4): the share of the backbone's "
                         "above-chance augmentation accuracy the head loses", "fraction"),
    "selectivity": FieldDoc("aug_loss minus class_loss (> 0: the head discards the "
                            "augmentation variable more than the class)", "fraction"),
}


def needs(params: GuillotineParams) -> list[Need]:
    """A test split; orbit coordinates for ``action``, square images for ``rotation``."""
    if params.augmentation == "action":
        return [TEST_SPLIT, has("orbit", "orbit coordinates for augmentation: action")]
    if params.augmentation == "rotation":
        return [TEST_SPLIT, square("square images (C, S, S) for augmentation: rotation")]
    return [TEST_SPLIT]


def build_guillotine(params: GuillotineParams, ctx) -> Guillotine:
    """Backbone minus head read-out accuracy (linear probe, k-NN or class centres), for the
    class and for the augmentation (image rotation or group element)."""
    data = getattr(ctx, "data", None)
    if data is not None:
        resolve_augmentation(params.augmentation, data)  # fail early on a mismatch
    return Guillotine(params)
