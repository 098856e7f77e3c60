"""``orbit_compression``'s raw, normalised and scale ratios against closed forms."""

import math

import pytest
import torch
from geobench_projection.metrics.orbit import OrbitCompression, OrbitParams, orbit_statistics
from geobench_projection.objectives import redundancy
from torch import nn

from geobench.components import heads
from geobench.contract.interfaces import Arm, BuildContext

from .helpers import metric_context, orbit_data


class Identity(nn.Identity):
    def __init__(self, d):
        super().__init__()
        self.feature_dim = d


def _scaled_arm(c: float, d: int = 6) -> Arm:
    """Identity backbone, head h = c z."""
    ctx = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=d)
    head = heads.build_linear_head(heads.LinearHeadParams(out=d), ctx)
    with torch.no_grad():
        head.projector.weight.copy_(c * torch.eye(d))
    ctx.embed_dim = d
    return Arm(Identity(d), head, redundancy.build_vicreg(redundancy.VICRegParams(), ctx)).eval()


def _random(n=7, k=5, d=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, k, d, generator=gen, dtype=torch.float64),
            torch.arange(n) % 3)


def test_rescaling_head_gives_inverse_square_raw_and_scale_ratios():
    z, y = _random()
    c = 3.0
    out = orbit_statistics(z, c * z, y)
    assert math.isclose(out["normalised_ratio"], 1.0, rel_tol=1e-12)
    assert math.isclose(out["raw_ratio"], 1 / c**2, rel_tol=1e-12)
    assert math.isclose(out["scale_ratio"], 1 / c**2, rel_tol=1e-12)
    assert math.isclose(out["backbone_orbit_ratio"], out["head_orbit_ratio"], rel_tol=1e-12)
    norm = orbit_statistics(z, c * z, y, normalize=True)
    for key in ("raw_ratio", "normalised_ratio", "scale_ratio"):
        assert math.isclose(norm[key], 1.0, rel_tol=1e-12), key


def test_shrinking_orbits_about_their_centroids():
    # two orbits centred at (+-a, 0), four offsets of length r each: W = r^2, T = r^2 + a^2
    a, r, s = 2.0, 1.0, 0.5
    centres = torch.tensor([[a, 0.0], [-a, 0.0]], dtype=torch.float64)
    offsets = r * torch.tensor([[1.0, 0], [-1, 0], [0, 1], [0, -1]], dtype=torch.float64)
    z = centres[:, None] + offsets[None]
    h = centres[:, None] + s * offsets[None]
    out = orbit_statistics(z, h, torch.tensor([0, 1]))
    wb, tb, wh, th = r**2, r**2 + a**2, s**2 * r**2, s**2 * r**2 + a**2
    assert math.isclose(out["backbone_orbit_ratio"], wb / tb, rel_tol=1e-12)
    assert math.isclose(out["head_orbit_ratio"], wh / th, rel_tol=1e-12)
    assert math.isclose(out["raw_ratio"], 1 / s**2, rel_tol=1e-12)
    assert math.isclose(out["normalised_ratio"], (wb / tb) / (wh / th), rel_tol=1e-12)
    assert math.isclose(out["scale_ratio"], tb / th, rel_tol=1e-12)
    assert math.isclose(out["backbone_class_sep"], a**2 / r**2, rel_tol=1e-12)
    assert math.isclose(out["head_class_sep"], a**2 / (s * r) ** 2, rel_tol=1e-12)
    assert math.isclose(out["class_sep_ratio"], 1 / s**2, rel_tol=1e-12)


@pytest.mark.parametrize("normalize", [False, True])
def test_raw_is_normalised_times_scale(normalize):
    z, y = _random(seed=1)
    h = torch.tanh(z @ torch.randn(4, 3, generator=torch.Generator().manual_seed(2),
                                   dtype=torch.float64))
    out = orbit_statistics(z, h, y, normalize=normalize)
    assert math.isclose(out["raw_ratio"], out["normalised_ratio"] * out["scale_ratio"],
                        rel_tol=1e-12)


def test_metric_on_a_rescaling_head():
    data = orbit_data()
    ctx = metric_context(_scaled_arm(4.0), data, [data.train_x[:2]] * 2, seed=3)
    out = OrbitCompression(OrbitParams(samples=10, views=4))(ctx)
    # h = 4 z is exact in floating point
    assert math.isclose(out["raw_ratio"], 1 / 16, rel_tol=1e-12)
    assert math.isclose(out["scale_ratio"], 1 / 16, rel_tol=1e-12)
    assert math.isclose(out["normalised_ratio"], 1.0, rel_tol=1e-12)
    ctx = metric_context(_scaled_arm(3.0), data, [data.train_x[:2]] * 2, seed=3)
    out = OrbitCompression(OrbitParams(samples=10, views=4, normalize=True))(ctx)
    for key in ("raw_ratio", "normalised_ratio", "scale_ratio"):
        assert math.isclose(out[key], 1.0, rel_tol=1e-5), key


def test_degenerate_spreads_are_nan():
    z = torch.ones(3, 4, 2, dtype=torch.float64)
    out = orbit_statistics(z, z, torch.tensor([0, 1, 0]))
    assert all(math.isnan(out[k]) for k in ("raw_ratio", "normalised_ratio", "scale_ratio",
                                            "backbone_orbit_ratio"))
