"""Augmentations: seeded determinism, batched ops vs torchvision, recipe semantics."""

from __future__ import annotations

import math

import pytest
import torch
from geobench_data import imageops as ops
from geobench_data.augment import blur_kernel_size, crop_boxes
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as TF

from tests.data.helpers import augmentation, data, gen

FIXED = {"crop_scale": (1.0, 1.0), "crop_ratio": (1.0, 1.0), "flip_p": 0.0, "jitter_p": 0.0,
         "grayscale_p": 0.0}


def images(n: int = 16, c: int = 3, size: int = 16, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, c, size, size, generator=gen(seed))


@pytest.mark.parametrize("name", ["simclr", "byol", "gaussian_noise"])
@pytest.mark.parametrize("channels", [1, 3])
def test_same_generator_state_same_views(name: str, channels: int) -> None:
    aug = augmentation({"name": name})
    x, index = images(c=channels), torch.arange(16)
    for view in (0, 1):
        a, b = aug(x, index, gen(11), view), aug(x, index, gen(11), view)
        assert torch.equal(a, b)
        assert not torch.allclose(a, aug(x, index, gen(12), view))
    assert a.shape == x.shape and a.dtype == x.dtype


def test_orbit_action_is_seeded_and_uses_the_orbit() -> None:
    d = data({"name": "orbit_manifold", "n_train": 32, "n_test": 16})
    aug = augmentation({"name": "orbit_action"}, d)
    index = torch.tensor([5, 1, 30])
    a = aug(d.train_x[index], index, gen(3))
    torch.testing.assert_close(a, d.extras["orbit"].views("train", index, gen(3)))
    assert torch.equal(a, aug(d.train_x[index], index, gen(3)))
    assert not torch.allclose(a, aug(d.train_x[index], index, gen(4)))


def test_orbit_action_needs_orbit_structure() -> None:
    with pytest.raises(ValueError, match="orbit structure"):
        augmentation({"name": "orbit_action"}, data({"name": "gaussian_mixture"}))


def test_none_and_noise() -> None:
    x = torch.randn(4000, 8, generator=gen(0))
    assert torch.equal(augmentation({"name": "none"})(x, torch.arange(4000), gen(0)), x)
    noisy = augmentation({"name": "gaussian_noise", "sigma": 0.3})(x, torch.arange(4000), gen(1))
    assert abs((noisy - x).std().item() - 0.3) < 0.01


def test_colour_ops_match_torchvision() -> None:
    x = images(6)
    for f in (0.3, 1.0, 1.6):
        factor = torch.full((6,), f)
        torch.testing.assert_close(ops.brightness(x, factor), TF.adjust_brightness(x, f))
        torch.testing.assert_close(ops.contrast(x, factor), TF.adjust_contrast(x, f))
        torch.testing.assert_close(ops.saturation(x, factor), TF.adjust_saturation(x, f))
    for shift in (-0.4, 0.1, 0.5):
        torch.testing.assert_close(ops.hue(x, torch.full((6,), shift)), TF.adjust_hue(x, shift),
                                   atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ops.grayscale(x), TF.rgb_to_grayscale(x))
    torch.testing.assert_close(ops.solarize(x, 0.5), TF.solarize(x, 0.5))
    sigma = torch.tensor([0.5, 1.0, 1.5, 2.0, 0.1, 0.8])
    blurred = ops.gaussian_blur(x, sigma, 5)
    for n in range(6):
        s = float(sigma[n])
        torch.testing.assert_close(blurred[n], TF.gaussian_blur(x[n], [5, 5], [s, s]))


def test_crop_matches_torchvision_resized_crop() -> None:
    x = images(3, size=20)
    boxes = torch.tensor([[2.0, 3.0, 10.0, 12.0], [0.0, 0.0, 20.0, 20.0], [5.0, 1.0, 7.0, 9.0]])
    flip = torch.tensor([False, True, True])
    out = ops.crop_flip(x, boxes, flip)
    for n in range(3):
        t, left, h, w = (int(v) for v in boxes[n])
        ref = TF.resized_crop(x[n], t, left, h, w, [20, 20], antialias=False)
        ref = ref.flip(-1) if flip[n] else ref
        # grid sampling reads half a pixel beyond the crop at its border: compare the interior
        torch.testing.assert_close(out[n, :, 1:-1, 1:-1], ref[:, 1:-1, 1:-1], atol=1e-5,
                                   rtol=1e-5)
    torch.testing.assert_close(out[1], x[1].flip(-1))


def test_crop_boxes_follow_torchvision_distribution() -> None:
    n, scale, ratio = 2000, (0.08, 1.0), (3 / 4, 4 / 3)
    g = gen(0)
    boxes = crop_boxes(32, 32, scale, ratio, torch.rand(n, 10, generator=g),
                       torch.rand(n, 10, generator=g), torch.rand(n, 2, generator=g))
    top, left, h, w = boxes.unbind(1)
    assert (top >= 0).all() and (left >= 0).all()
    assert (top + h <= 32).all() and (left + w <= 32).all() and (h >= 1).all()
    torch.manual_seed(0)
    tv = v2.RandomResizedCrop(32, scale=scale, ratio=ratio)
    areas = []
    for _ in range(n):
        p = tv.make_params([torch.zeros(3, 32, 32)])
        areas.append(p["height"] * p["width"] / 1024)
    ours = (h * w / 1024).mean().item()
    assert abs(ours - sum(areas) / n) < 0.02


def test_fixed_crop_is_identity_and_flip_mirrors() -> None:
    x = images()
    same = augmentation({"name": "simclr", **FIXED})(x, torch.arange(16), gen(0))
    torch.testing.assert_close(same, x)
    flipped = augmentation({"name": "simclr", **FIXED, "flip_p": 1.0})(x, torch.arange(16),
                                                                       gen(0))
    torch.testing.assert_close(flipped, x.flip(-1))
    gray = augmentation({"name": "simclr", **FIXED, "grayscale_p": 1.0})(x, torch.arange(16),
                                                                         gen(0))
    torch.testing.assert_close(gray, TF.rgb_to_grayscale(x, num_output_channels=3))


def test_byol_views_are_asymmetric() -> None:
    x = images(8, size=32)
    spec = {"name": "byol", **FIXED, "blur_sigma": (1.0, 1.0), "solarize_p": (0.0, 1.0),
            "blur_p": (1.0, 0.0)}
    aug = augmentation(spec)
    k = blur_kernel_size(32)
    view0, view1 = aug(x, torch.arange(8), gen(0), 0), aug(x, torch.arange(8), gen(0), 1)
    torch.testing.assert_close(view0, TF.gaussian_blur(x, [k, k], [1.0, 1.0]))
    torch.testing.assert_close(view1, TF.solarize(x, 0.5))
    defaults = augmentation({"name": "byol"})
    assert defaults.blur_p == (1.0, 0.1) and defaults.solarize_p == (0.0, 0.2)


def test_jitter_on_gray_images_changes_only_brightness_contrast() -> None:
    x = images(64, c=1)
    spec = {**FIXED, "name": "simclr", "jitter_p": 1.0, "contrast": 0.0, "saturation": 0.8,
            "hue": 0.5, "brightness": 0.5}
    out = augmentation(spec)(x, torch.arange(64), gen(0))
    # brightness only: each image is a clamped multiple of itself, factor in [0.5, 1.5]
    unclamped = (out > 0) & (out < 1) & (x > 0.05)
    ratio = torch.where(unclamped, out / x, torch.nan)
    per_image = ratio.flatten(1).nanmean(1)
    spread = (ratio.flatten(1) - per_image[:, None]).abs().nan_to_num().amax(1)
    assert (spread < 1e-4).all() and (per_image >= 0.5 - 1e-5).all()
    assert (per_image <= 1.5 + 1e-5).all() and per_image.std() > 0.1


def test_image_recipes_reject_vectors() -> None:
    with pytest.raises(ValueError, match="gaussian_noise"):
        augmentation({"name": "simclr"})(torch.zeros(4, 8), torch.arange(4), gen(0))


def test_default_simclr_draws_are_in_range() -> None:
    x = images(64, size=32)
    out = augmentation({"name": "simclr"})(x, torch.arange(64), gen(0))
    assert out.min() >= 0 and out.max() <= 1 and not torch.isnan(out).any()
    assert math.isclose(augmentation({"name": "simclr"}).jitter[0], 0.8)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_views_identical_on_cpu_and_cuda() -> None:
    x = images(32, size=32)
    for name in ("simclr", "byol"):
        aug = augmentation({"name": name})
        cpu = aug(x, torch.arange(32), gen(5), 1)
        cuda = aug(x.cuda(), torch.arange(32), gen(5), 1)
        torch.testing.assert_close(cuda.cpu(), cpu, atol=1e-4, rtol=1e-4)


def test_quarter_turns_are_exact_uniform_and_leave_other_recipes_alone() -> None:
    x, index = images(n=400, c=1, size=5), torch.arange(400)
    turned = augmentation({"name": "simclr", **FIXED, "rot90_p": 1.0})(x, index, gen(3))
    candidates = torch.stack([torch.rot90(x, k, (-2, -1)) for k in range(4)], dim=1)
    match = (candidates == turned[:, None]).flatten(2).all(-1)
    assert match.any(dim=1).all()  # every view is x turned by a whole number of quarters
    counts = torch.bincount(match.int().argmax(dim=1), minlength=4)
    assert counts.min() > 70 and counts.max() < 130  # ~100 each (uniform k)
    # with crops and jitter on: the turn comes after every other draw, so a turned view is a
    # quarter turn of the same generator's unturned view, and it costs 2 x n more uniforms
    x = images(n=64, c=3, size=8)
    g1, g2 = gen(5), gen(5)
    plain = augmentation({"name": "simclr"})(x, torch.arange(64), g1)
    torch.rand(64, 1, generator=g1), torch.rand(64, 1, generator=g1)
    turned = augmentation({"name": "simclr", "rot90_p": 1.0})(x, torch.arange(64), g2)
    candidates = torch.stack([torch.rot90(plain, k, (-2, -1)) for k in range(4)], dim=1)
    assert (candidates - turned[:, None]).abs().flatten(2).amax(-1).amin(1).max() < 1e-6
    assert torch.equal(g1.get_state(), g2.get_state())
    with pytest.raises(ValueError, match="square"):
        augmentation({"name": "simclr", **FIXED, "rot90_p": 1.0})(x[..., :4], index, gen(0))
