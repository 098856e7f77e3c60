"""Collapse indicators of an embedding batch: effective rank and std of normalised rows."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def effective_rank(Z: Tensor, center: bool = True) -> float:
    """Effective rank (Roy & Vetterli, 2007) of the (n, d) embedding matrix Z.

    erank(Z) = exp(-sum_i p_i log p_i), p_i = sigma_i / sum_j sigma_j over the singular
    values of Z, with 0 log 0 = 0.  By default Z is centred first (rows minus their mean),
    the usual practice for measuring dimensional collapse of SSL embeddings: a batch whose
    rows all coincide then has effective rank 0, whatever the shared row.  Singular values
    at or below max(n, d) * eps(dtype) * ||Z||_2 (of the uncentred Z: the round-off that
    centring leaves) count as 0, so float noise does not read as spread; with all of them 0
    the effective rank is 0.  Computed in float64.
    """
    X = Z.detach().to(torch.float64).flatten(1)
    scale = torch.linalg.matrix_norm(X, ord=2)
    if center:
        X = X - X.mean(dim=0, keepdim=True)
    sigma = torch.linalg.svdvals(X)
    sigma = sigma[sigma > max(X.shape) * torch.finfo(Z.dtype).eps * scale]
    if sigma.numel() == 0:
        return 0.0
    p = sigma / sigma.sum()
    return float(torch.exp(-(p * p.log()).sum()))


def embedding_std(Z: Tensor) -> float:
    """Std of the l2-normalised embeddings, averaged over dimensions (SimSiam's indicator).

    Each row is divided by its norm, the per-dimension standard deviation over the batch is
    taken (unbiased, n - 1), and averaged over the d dimensions.  Rows spread isotropically
    give about 1/sqrt(d); a collapsed batch (all rows pointing the same way) gives 0.
    A zero row stays zero.
    """
    X = F.normalize(Z.detach().to(torch.float64).flatten(1), dim=1)
    return float(X.std(dim=0).mean())
