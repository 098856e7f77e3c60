"""Augmentations: batched, on the batch's device, randomness drawn from a CPU generator.

Every per-sample random parameter is drawn from the ``generator`` passed in, on the CPU, in
a fixed order and a fixed amount per call (whatever the probabilities and the data), then
moved to the batch's device: identical generator states give identical views on any device.
The moves never wait for the device (``host_to_device``), so on a GPU the host queues a
view's kernels while the previous step still runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import Field, field_validator
from torch import Tensor

from geobench.api import BuildContext, Params, host_to_device
from geobench.params import IMAGES, Need, square
from geobench_data import imageops as ops

Pair = tuple[float, float]


@dataclass(frozen=True)
class ImageRecipe:
    """Random resized crop, flip, colour jitter, grayscale, blur, solarize, quarter-turn
    rotation (in this order).

    ``blur_p`` / ``solarize_p`` are per view: view v uses entry ``v % 2``.  Colour jitter
    applies brightness, contrast, saturation and hue in a random order per sample (as
    torchvision's ColorJitter).  On 1-channel images saturation, hue and grayscale are
    skipped (they leave a gray image unchanged); brightness and contrast still apply.
    With ``rot90_p`` > 0 a sample is, with that probability, rotated by k quarter turns,
    k uniform in {0, 1, 2, 3} (``torch.rot90``, exact; square images only).  Its two draws
    are made only by recipes with ``rot90_p`` > 0, so recipes without it keep their streams.
    """

    crop_scale: Pair
    crop_ratio: Pair
    flip_p: float
    jitter_p: float
    jitter: tuple[float, float, float, float]
    grayscale_p: float
    blur_p: Pair
    blur_sigma: Pair
    blur_kernel: int | None
    solarize_p: Pair
    solarize_threshold: float
    rot90_p: float = 0.0

    def __call__(self, x: Tensor, index: Tensor, generator: torch.Generator,
                 view: int = 0) -> Tensor:
        if x.dim() != 4:
            raise ValueError(f"image augmentations need (N, C, H, W) batches, got shape "
                             f"{tuple(x.shape)}; use gaussian_noise or orbit_action for vectors")
        n = len(x)
        r = _Draws(n, generator)
        boxes = crop_boxes(x.shape[-2], x.shape[-1], self.crop_scale, self.crop_ratio,
                           r.uniform(10), r.uniform(10), r.uniform(2))
        flip = r.coin(self.flip_p)
        out = ops.crop_flip(x, host_to_device(boxes, x.device),
                            host_to_device(flip, x.device))  # a new tensor: edited in place
        out = self._jitter(out, r.coin(self.jitter_p), r.uniform(4), r.uniform(4))
        gray = r.coin(self.grayscale_p)
        if out.shape[1] == 3:
            out = _apply(out, gray, lambda z, _: ops.grayscale(z).expand_as(z))
        blur, u_sigma = r.coin(self.blur_p[view % 2]), r.uniform(1)[:, 0]
        lo, hi = self.blur_sigma
        sigma = host_to_device(lo + (hi - lo) * u_sigma, x.device)
        kernel = self.blur_kernel or blur_kernel_size(min(x.shape[-2:]))
        if kernel // 2 >= min(x.shape[-2:]):
            raise ValueError(f"blur_kernel {kernel} is too large for {tuple(x.shape[-2:])} images")
        out = _apply(out, blur, lambda z, i: ops.gaussian_blur(z, sigma[i], kernel))
        solar = r.coin(self.solarize_p[view % 2])
        out = _apply(out, solar, lambda z, _: ops.solarize(z, self.solarize_threshold))
        return self._rotate(out, r) if self.rot90_p > 0 else out

    def _rotate(self, x: Tensor, r: _Draws) -> Tensor:
        if x.shape[-2] != x.shape[-1]:
            raise ValueError(f"rot90_p needs square images, got {tuple(x.shape[-2:])}")
        on, turns = r.coin(self.rot90_p), (r.uniform(1)[:, 0] * 4).long().clamp(max=3)
        for k in (1, 2, 3):
            x = _apply(x, on & (turns == k), lambda z, _, k=k: torch.rot90(z, k, (-2, -1)))
        return x

    def _jitter(self, x: Tensor, on: Tensor, u: Tensor, order_keys: Tensor) -> Tensor:
        b, c, s, h = self.jitter
        lo = torch.tensor([max(0.0, 1 - b), max(0.0, 1 - c), max(0.0, 1 - s), -h])
        hi = torch.tensor([1 + b, 1 + c, 1 + s, h])
        factors = host_to_device(lo + (hi - lo) * u, x.device)
        order = order_keys.argsort(dim=1)
        colour = x.shape[1] == 3
        steps = [(ops.brightness, b > 0), (ops.contrast, c > 0),
                 (ops.saturation, s > 0 and colour), (ops.hue, h > 0 and colour)]
        for k in range(4):
            for op, (fn, active) in enumerate(steps):
                if active:
                    x = _apply(x, on & (order[:, k] == op),
                               lambda z, i, fn=fn, op=op: fn(z, factors[i, op]))
        return x


class _Draws:
    """Fixed-size uniform draws from a CPU generator."""

    def __init__(self, n: int, generator: torch.Generator) -> None:
        self.n, self.generator = n, generator

    def uniform(self, k: int) -> Tensor:
        return torch.rand(self.n, k, generator=self.generator)

    def coin(self, p: float) -> Tensor:
        return self.uniform(1)[:, 0] < p


def _apply(x: Tensor, mask: Tensor, fn: Any) -> Tensor:
    """Write ``fn(x[i], i)`` into ``x`` (in place) at the index set ``i = nonzero(mask)`` of
    the CPU ``mask`` (``i`` on ``x``'s device)."""
    idx = torch.nonzero(mask).flatten()
    if len(idx):
        on_device = host_to_device(idx, x.device)
        x[on_device] = fn(x[on_device], on_device)
    return x


def blur_kernel_size(side: int) -> int:
    """Odd kernel of about 10% of the image side (BYOL: 23 px at 224), at least 3, and
    small enough for reflect padding (half-width below the side)."""
    k = max(3, round(0.1 * side))
    return min(k + 1 - k % 2, max(1, 2 * ((side - 1) // 2) + 1))


def crop_boxes(h: int, w: int, scale: Pair, ratio: Pair, u_area: Tensor, u_ratio: Tensor,
               u_pos: Tensor) -> Tensor:
    """Random-resized-crop boxes (top, left, height, width) in pixels, torchvision's rule.

    Ten candidates per sample: area fraction ~ U(scale), log aspect ~ U(log ratio); the
    first that fits is placed uniformly; if none fits, the largest centred crop with the
    aspect clamped to ``ratio``.  ``u_*`` are uniforms of shapes (N, 10), (N, 10), (N, 2).
    """
    area = h * w * (scale[0] + (scale[1] - scale[0]) * u_area)
    log_r = math.log(ratio[0]) + (math.log(ratio[1]) - math.log(ratio[0])) * u_ratio
    aspect = torch.exp(log_r)
    cw = torch.round(torch.sqrt(area * aspect))
    ch = torch.round(torch.sqrt(area / aspect))
    fits = (cw > 0) & (cw <= w) & (ch > 0) & (ch <= h)
    first = fits.to(torch.int64).argmax(dim=1, keepdim=True)
    bw, bh = cw.gather(1, first)[:, 0], ch.gather(1, first)[:, 0]
    in_ratio = w / h
    if in_ratio < min(ratio):
        fw, fh = w, round(w / min(ratio))
    elif in_ratio > max(ratio):
        fw, fh = round(h * max(ratio)), h
    else:
        fw, fh = w, h
    ok = fits.any(dim=1)
    bw, bh = torch.where(ok, bw, float(fw)), torch.where(ok, bh, float(fh))
    top = torch.where(ok, torch.floor(u_pos[:, 0] * (h - bh + 1)), float((h - fh) // 2))
    left = torch.where(ok, torch.floor(u_pos[:, 1] * (w - bw + 1)), float((w - fw) // 2))
    return torch.stack((top, left, bh, bw), dim=1)


class ImageRecipeParams(Params):
    """Fields shared by the image recipes."""

    crop_scale: Pair = Field((0.08, 1.0), description="random resized crop: area fraction range")
    crop_ratio: Pair = Field((3 / 4, 4 / 3), description="random resized crop: aspect range")
    flip_p: float = Field(0.5, ge=0, le=1, description="horizontal flip probability")
    jitter_p: float = Field(0.8, ge=0, le=1, description="colour jitter probability")
    grayscale_p: float = Field(0.2, ge=0, le=1, description="grayscale probability (RGB only)")
    blur_sigma: Pair = Field((0.1, 2.0), description="gaussian blur sigma range (pixels)")
    blur_kernel: int | None = Field(
        None, ge=1, description="blur kernel size, odd (None: ~10% of the image side)"
    )

    @field_validator("blur_kernel")
    @classmethod
    def _odd(cls, kernel: int | None) -> int | None:
        if kernel is not None and kernel % 2 == 0:
            raise ValueError("an odd number of pixels (the blur is centred)")
        return kernel
    rot90_p: float = Field(0.0, ge=0, le=1, description="probability of a rotation by a "
                           "uniform number of quarter turns (square images)")


class SimCLRParams(ImageRecipeParams):
    """SimCLR's recipe (Chen et al. 2020) with colour strength s = 1."""

    brightness: float = Field(0.8, ge=0, description="brightness factor ~ U[1-b, 1+b]")
    contrast: float = Field(0.8, ge=0, description="contrast factor ~ U[1-c, 1+c]")
    saturation: float = Field(0.8, ge=0, description="saturation factor ~ U[1-s, 1+s]")
    hue: float = Field(0.2, ge=0, le=0.5, description="hue shift ~ U[-h, h] (turns)")
    blur_p: float = Field(0.0, ge=0, le=1, description="gaussian blur probability "
                          "(SimCLR: 0 on CIFAR, 0.5 on ImageNet)")


class BYOLParams(ImageRecipeParams):
    """BYOL's asymmetric recipe (Grill et al. 2020): view 0 vs view 1 blur / solarize."""

    brightness: float = Field(0.4, ge=0, description="brightness factor ~ U[1-b, 1+b]")
    contrast: float = Field(0.4, ge=0, description="contrast factor ~ U[1-c, 1+c]")
    saturation: float = Field(0.2, ge=0, description="saturation factor ~ U[1-s, 1+s]")
    hue: float = Field(0.1, ge=0, le=0.5, description="hue shift ~ U[-h, h] (turns)")
    blur_p: Pair = Field((1.0, 0.1), description="blur probability of view 0 and view 1")
    solarize_p: Pair = Field((0.0, 0.2), description="solarize probability of view 0, view 1")
    solarize_threshold: float = Field(0.5, description="solarize pixels >= threshold")


def recipe_needs(params: ImageRecipeParams) -> list[Need]:
    """Images; sides longer than half an explicit ``blur_kernel``; square ones to rotate."""
    needs = [IMAGES]
    k = params.blur_kernel
    if k is not None:
        needs.append(Need(("input_shape",), lambda s: len(s) == 3 and min(s[1:]) > k // 2,
                          f"images whose sides exceed blur_kernel {k} // 2 = {k // 2} pixels"))
    if params.rot90_p > 0:
        needs.append(square(f"square images to rotate (rot90_p {params.rot90_p})"))
    return needs


def build_image_recipe(params: ImageRecipeParams, ctx: BuildContext) -> ImageRecipe:
    """The crop/flip/jitter/grayscale(/blur/solarize/rotation) pipeline with ``params``."""
    blur = params.blur_p if isinstance(params.blur_p, tuple) else (params.blur_p,) * 2
    return ImageRecipe(
        crop_scale=params.crop_scale, crop_ratio=params.crop_ratio, flip_p=params.flip_p,
        jitter_p=params.jitter_p,
        jitter=(params.brightness, params.contrast, params.saturation, params.hue),
        grayscale_p=params.grayscale_p, blur_p=blur, blur_sigma=params.blur_sigma,
        blur_kernel=params.blur_kernel, solarize_p=getattr(params, "solarize_p", (0.0, 0.0)),
        solarize_threshold=getattr(params, "solarize_threshold", 0.5), rot90_p=params.rot90_p,
    )
