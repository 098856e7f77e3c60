"""The SSL loss formulas as plain functions of embedding tensors (rows are samples)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def negative_cosine(p: Tensor, z: Tensor) -> Tensor:
    """SimSiam's D(p, z) = -(1/B) sum_i <p_i, z_i> / (||p_i|| ||z_i||); pass z detached."""
    return -F.cosine_similarity(p, z, dim=-1).mean()


def byol_regression(p: Tensor, z: Tensor) -> Tensor:
    """BYOL's (1/B) sum_i ||p_i/||p_i|| - z_i/||z_i|| ||^2 = (1/B) sum_i (2 - 2 cos(p_i, z_i))."""
    return (2.0 - 2.0 * F.cosine_similarity(p, z, dim=-1)).mean()


def off_diagonal(m: Tensor) -> Tensor:
    """The off-diagonal entries of a square matrix, flattened."""
    n = m.shape[0]
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def vicreg(z1: Tensor, z2: Tensor, sim_coeff: float = 25.0, std_coeff: float = 25.0,
           cov_coeff: float = 1.0, gamma: float = 1.0, eps: float = 1e-4) -> Tensor:
    """VICReg (Bardes et al. 2022, reference code):
    sim * mean((z1 - z2)^2)
    + std * [mean_j relu(gamma - sqrt(Var(z1_j) + eps)) + (same for z2)] / 2
    + cov * [sum_{i != j} C(z1)_ij^2 + (same for z2)] / d,
    Var unbiased, C the unbiased covariance of the centred batch."""
    b, d = z1.shape
    repr_loss = F.mse_loss(z1, z2)
    std_loss = z1.new_zeros(())
    cov_loss = z1.new_zeros(())
    for z in (z1, z2):
        z = z - z.mean(dim=0)
        std = torch.sqrt(z.var(dim=0) + eps)
        std_loss = std_loss + F.relu(gamma - std).mean() / 2
        cov = (z.T @ z) / (b - 1)
        cov_loss = cov_loss + off_diagonal(cov).pow(2).sum() / d
    return sim_coeff * repr_loss + std_coeff * std_loss + cov_coeff * cov_loss


def barlow_twins(z1: Tensor, z2: Tensor, lambd: float = 0.0051, eps: float = 1e-5) -> Tensor:
    """Barlow Twins (Zbontar et al. 2021, reference code): with each dimension standardised
    over the batch (biased variance + eps, as BatchNorm1d without affine),
    C = z1n^T z2n / B and L = sum_i (1 - C_ii)^2 + lambd * sum_{i != j} C_ij^2."""
    b = z1.shape[0]

    def standardise(z: Tensor) -> Tensor:
        return (z - z.mean(0)) / torch.sqrt(z.var(0, unbiased=False) + eps)

    c = standardise(z1).T @ standardise(z2) / b
    on_diag = (torch.diagonal(c) - 1).pow(2).sum()
    return on_diag + lambd * off_diagonal(c).pow(2).sum()


def dino(student_logits: list[Tensor], teacher_probs: list[Tensor],
         student_temp: float) -> Tensor:
    """DINO (Caron et al. 2021): the mean over ordered pairs of distinct views (t, s) of
    (1/B) sum_i H(P_t,i, softmax(s_i / student_temp)), H(p, q) = -sum_k p_k log q_k.
    ``teacher_probs`` are already centred and sharpened (and constant)."""
    total = student_logits[0].new_zeros(())
    terms = 0
    for it, q in enumerate(teacher_probs):
        for iv, s in enumerate(student_logits):
            if iv == it:
                continue
            total = total + torch.sum(-q * F.log_softmax(s / student_temp, dim=-1), dim=-1).mean()
            terms += 1
    return total / terms
