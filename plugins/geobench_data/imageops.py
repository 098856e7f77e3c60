"""Batched image operations with per-sample parameters, for (N, C, H, W) floats in [0, 1].

No randomness here: every function takes its per-sample parameters as tensors (on any
device) and follows the definitions of torchvision's functional transforms.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

GRAY_WEIGHTS = (0.2989, 0.587, 0.114)  # ITU-R 601-2 luma, as torchvision


def _col(v: Tensor) -> Tensor:
    return v.to(torch.float32).view(-1, 1, 1, 1)


def crop_flip(x: Tensor, boxes: Tensor, flip: Tensor) -> Tensor:
    """Crop each image to ``boxes[n] = (top, left, height, width)`` (pixels), resize the crop
    bilinearly back to (H, W) and mirror it horizontally where ``flip[n]`` is true."""
    n, _, h, w = x.shape
    top, left, bh, bw = boxes.to(x.device, x.dtype).unbind(1)
    sign = 1.0 - 2.0 * flip.to(x.device, x.dtype)
    theta = torch.zeros(n, 2, 3, device=x.device, dtype=x.dtype)
    theta[:, 0, 0] = bw / w * sign
    theta[:, 0, 2] = (2 * left + bw) / w - 1
    theta[:, 1, 1] = bh / h
    theta[:, 1, 2] = (2 * top + bh) / h - 1
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def grayscale(x: Tensor) -> Tensor:
    """(N, 1, H, W) luma of RGB images (1-channel images are returned as they are)."""
    if x.shape[1] == 1:
        return x
    r, g, b = x.unbind(1)
    return (GRAY_WEIGHTS[0] * r + GRAY_WEIGHTS[1] * g + GRAY_WEIGHTS[2] * b).unsqueeze(1)


def _blend(x: Tensor, other: Tensor, factor: Tensor) -> Tensor:
    f = _col(factor).to(x.device)
    return (f * x + (1.0 - f) * other).clamp(0.0, 1.0)


def brightness(x: Tensor, factor: Tensor) -> Tensor:
    """x * factor, clamped."""
    return (x * _col(factor).to(x.device)).clamp(0.0, 1.0)


def contrast(x: Tensor, factor: Tensor) -> Tensor:
    """Blend with the mean grey level of each image."""
    return _blend(x, grayscale(x).mean(dim=(1, 2, 3), keepdim=True), factor)


def saturation(x: Tensor, factor: Tensor) -> Tensor:
    """Blend with the grayscale image (RGB only)."""
    return _blend(x, grayscale(x), factor)


def _rgb_to_hsv(x: Tensor) -> Tensor:
    r, g, b = x.unbind(1)
    maxc, minc = x.max(dim=1).values, x.min(dim=1).values
    eqc = maxc == minc
    cr = maxc - minc
    ones = torch.ones_like(maxc)
    s = cr / torch.where(eqc, ones, maxc)
    cr_div = torch.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / cr_div, (maxc - g) / cr_div, (maxc - b) / cr_div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = torch.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return torch.stack((h, s, maxc), dim=1)


def _hsv_to_rgb(x: Tensor) -> Tensor:
    """Closed form: channel n in (5, 3, 1) is v - v s clamp(min(k, 4 - k), 0, 1),
    k = (n + 6 h) mod 6 (the piecewise-linear hue ramps of the standard HSV model)."""
    h, s, v = x[:, 0:1], x[:, 1:2], x[:, 2:3]
    n = torch.arange(5.0, 0.0, -2.0, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    k = torch.remainder(n + 6.0 * h, 6.0)
    ramp = torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)
    return (v - v * s * ramp).clamp(0.0, 1.0)


def hue(x: Tensor, shift: Tensor) -> Tensor:
    """Rotate the hue by ``shift`` (fraction of a turn, in [-0.5, 0.5]); RGB only."""
    hsv = _rgb_to_hsv(x)
    h = torch.remainder(hsv[:, 0] + shift.to(x.device, x.dtype).view(-1, 1, 1), 1.0)
    return _hsv_to_rgb(torch.stack((h, hsv[:, 1], hsv[:, 2]), dim=1))


def gaussian_blur(x: Tensor, sigma: Tensor, kernel_size: int) -> Tensor:
    """Separable Gaussian blur, per-sample ``sigma``, odd ``kernel_size``, reflect padding."""
    n, c, h, w = x.shape
    half = (kernel_size - 1) / 2
    pos = torch.linspace(-half, half, kernel_size, device=x.device, dtype=x.dtype)
    kernel = torch.exp(-0.5 * (pos / sigma.to(x.device, x.dtype).view(-1, 1)) ** 2)
    kernel = (kernel / kernel.sum(dim=1, keepdim=True)).repeat_interleave(c, dim=0)
    pad = kernel_size // 2
    y = F.pad(x.reshape(1, n * c, h, w), (pad, pad, pad, pad), mode="reflect")
    y = F.conv2d(y, kernel.view(n * c, 1, 1, kernel_size), groups=n * c)
    y = F.conv2d(y, kernel.view(n * c, 1, kernel_size, 1), groups=n * c)
    return y.view(n, c, h, w)


def solarize(x: Tensor, threshold: float) -> Tensor:
    """Invert pixels at or above ``threshold``."""
    return torch.where(x >= threshold, 1.0 - x, x)
