"""``orbit_compression``: how much the head shrinks augmentation orbits.

For N fixed training samples x_i (the same at every evaluation) and K augmented views
x_ik of each -- exact group orbits ``data.extras["orbit"].orbit("train", i, K)`` on
``orbit_manifold``, otherwise K calls of the suite's augmentation (view numbers alternating
0, 1, so asymmetric recipes contribute both their views) -- and a space with
points p_ik (backbone representations z or head outputs h, arm in evaluation mode;
with ``normalize`` each point is first L2-normalised, p_ik / ||p_ik||, as the authors'
code does):

  within-orbit spread  W = (1/NK) sum_ik ||p_ik - pbar_i||^2     (pbar_i the orbit mean)
  total spread         T = (1/NK) sum_ik ||p_ik - pbar||^2       (pbar the grand mean)
  orbit ratio          r = W / T                                  (scale-free, in [0, 1])
  raw_ratio            W_b / W_h             (the authors' "compression_ratio")
  normalised_ratio     (W_b / T_b) / (W_h / T_h) = r_b / r_h
  scale_ratio          T_b / T_h             (global spread, backbone over head space)
  so raw_ratio = normalised_ratio * scale_ratio exactly (b: backbone, h: head).
  class separation     S = B / Wc, B = (1/NK) sum_ik ||mu_y(ik) - pbar||^2,
                       Wc = (1/NK) sum_ik ||p_ik - mu_y(ik)||^2  (mu_c the class means)
  class_sep_ratio      S_h / S_b  (>= 1: the head keeps classes at least as far apart)

Spreads are variances (mean squared distances), not standard deviations: a head that only
rescales, h = c z, gives raw_ratio = 1/c^2, normalised_ratio = 1, scale_ratio = 1/c^2.  The
raw ratio therefore mixes orbit compression with a global change of scale between the two
spaces; the normalised ratio removes it.  With ``normalize`` a global scale cancels before
measuring (h = c z, c > 0, gives raw_ratio = 1), but per-point norms are discarded too.
Class separations are measured on the same (normalised or not) points.  Non-finite
quotients are reported as NaN.
"""

from __future__ import annotations

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import Data, FieldDoc, Metric, MetricContext, MetricParams
from geobench_projection.metrics.common import features, finite_or_nan, fixed_indices


class OrbitParams(MetricParams):
    samples: int = Field(128, ge=2, description="training samples N whose orbits are drawn")
    views: int = Field(8, ge=2, description="augmented views K per sample")
    normalize: bool = Field(False, description="L2-normalise each representation before "
                            "measuring, as the authors' code does")


def orbit_spread(points: Tensor) -> tuple[float, float]:
    """(W, T) of ``points`` (N, K, d): mean squared distance to the orbit mean / grand mean."""
    p = points.double()
    within = (p - p.mean(dim=1, keepdim=True)).pow(2).sum(-1).mean()
    total = (p - p.mean(dim=(0, 1))).pow(2).sum(-1).mean()
    return float(within), float(total)


def class_separation(points: Tensor, labels: Tensor) -> float:
    """B / Wc of ``points`` (M, d) with class ``labels`` (M,): between-class over
    within-class mean squared distance."""
    p = points.double()
    grand = p.mean(0)
    means = torch.zeros(int(labels.max()) + 1, p.shape[1], dtype=p.dtype, device=p.device)
    means.index_add_(0, labels, p)
    counts = torch.bincount(labels, minlength=means.shape[0]).clamp_min(1).to(p.dtype)
    mu = (means / counts[:, None])[labels]
    between = (mu - grand).pow(2).sum(-1).mean()
    within = (p - mu).pow(2).sum(-1).mean()
    return finite_or_nan(between / within)


def draw_orbits(data: Data, augmentation, index: Tensor, k: int,
                generator: torch.Generator) -> Tensor:
    """(N, K, ...) views of the training samples ``index``: exact orbits on datasets with
    an ``orbit`` structure, else K independent calls of ``augmentation``."""
    device = data.train_x.device
    orbit = data.extras.get("orbit")
    if orbit is not None and hasattr(orbit, "orbit"):
        return orbit.orbit("train", index.cpu(), k, generator).to(device, data.train_x.dtype)
    x = data.train_x[index.to(device)]
    views = [augmentation(x, index.to(device), generator, view=v % 2) for v in range(k)]
    return torch.stack(views, dim=1)


def _quotient(a: float, b: float) -> float:
    return finite_or_nan(a / b) if b != 0 else float("nan")


def orbit_statistics(z: Tensor, h: Tensor, labels: Tensor,
                     normalize: bool = False) -> dict[str, float]:
    """Orbit ratios, raw / normalised / scale ratios and class separations from (N, K, d)
    backbone and (N, K, m) head points of samples with ``labels`` (N,); with ``normalize``
    each point is L2-normalised first."""
    if normalize:
        z = torch.nn.functional.normalize(z.double(), dim=-1)
        h = torch.nn.functional.normalize(h.double(), dim=-1)
    wb, tb = orbit_spread(z)
    wh, th = orbit_spread(h)
    rb, rh = _quotient(wb, tb), _quotient(wh, th)
    y = labels.repeat_interleave(z.shape[1])
    sb, sh = class_separation(z.flatten(0, 1), y), class_separation(h.flatten(0, 1), y)
    return {"backbone_orbit_ratio": rb, "head_orbit_ratio": rh,
            "raw_ratio": _quotient(wb, wh),
            "normalised_ratio": _quotient(rb, rh),
            "scale_ratio": _quotient(tb, th),
            "backbone_class_sep": sb, "head_class_sep": sh,
            "class_sep_ratio": _quotient(sh, sb)}


class OrbitCompression(Metric):
    """Orbit spreads in backbone and head space, their ratios, and class separation."""

    params: OrbitParams

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        p = self.params
        index = fixed_indices(len(ctx.data.train_x), p.samples, ctx.seed)
        views = draw_orbits(ctx.data, ctx.augmentation, index, p.views, ctx.generator)
        n, k = views.shape[:2]
        z, h = features(ctx.arm, views.flatten(0, 1))
        labels = ctx.data.train_y[index.to(ctx.data.train_y.device)].long()
        return orbit_statistics(z.view(n, k, -1), h.view(n, k, -1), labels, p.normalize)


def build_orbit_compression(params: OrbitParams, ctx) -> OrbitCompression:
    """Orbit spread in backbone vs head space: raw, normalised and scale ratios."""
    return OrbitCompression(params)


ORBIT_COMPRESSION_FIELDS = {
    "backbone_orbit_ratio": FieldDoc("within-orbit over total spread of backbone "
                                     "representations (0: orbits collapsed to points)"),
    "head_orbit_ratio": FieldDoc("within-orbit over total spread of head outputs "
                                 "(0: orbits collapsed to points)"),
    "raw_ratio": FieldDoc("within-orbit spread (variance) of backbone representations over "
                          "that of head outputs, W_b / W_h (the authors' compression ratio; "
                          "includes the spaces' difference in total spread: without "
                          "normalize, h = c z gives 1/c^2)"),
    "normalised_ratio": FieldDoc("backbone orbit ratio over head orbit ratio, "
                                 "(W_b / T_b) / (W_h / T_h) (> 1: the head shrinks orbits "
                                 "relative to the data; a global scale cancels)"),
    "scale_ratio": FieldDoc("total spread of backbone representations over that of head "
                            "outputs, T_b / T_h (raw_ratio = normalised_ratio x scale_ratio)"),
    "backbone_class_sep": FieldDoc("between-class over within-class mean squared distance "
                                   "of backbone representations"),
    "head_class_sep": FieldDoc("between-class over within-class mean squared distance of "
                               "head outputs"),
    "class_sep_ratio": FieldDoc("head over backbone class separation (>= 1: the head keeps "
                                "the classes at least as far apart, relative to their "
                                "spread)"),
}
