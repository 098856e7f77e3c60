"""Contrastive losses over two views: NT-Xent (CL), NSCL and SupCon.

``z1``, ``z2`` are the (B, d) embeddings of the two views of the same B samples; they are
l2-normalised inside.  The 2B views are indexed a = 0..2B-1 (view 1 then view 2), view a
belongs to sample ``a mod B``, its positive ``p(a)`` is the other view of that sample, and
``s_ab = <z_a, z_b> / tau``.  Every loss is the mean over the 2B anchors.

- ``nt_xent`` (SimCLR, CL): ``l_a = -log( e^{s_{a,p(a)}} / sum_{b != a} e^{s_ab} )``.
- ``nscl`` (negatives-only supervised contrastive): same-class views are dropped from
  the denominator, ``l_a = -log( e^{s_{a,p(a)}} / (e^{s_{a,p(a)}} + sum_{b: y_b != y_a}
  e^{s_ab}) )``; with ``positive_in_denominator=False`` the positive term is left out of
  the denominator (the paper's formula; the authors' released loss keeps it).
- ``supcon`` (Khosla et al. 2020, L^sup_out): ``l_a = -1/|P(a)| sum_{p in P(a)} log(
  e^{s_ap} / sum_{b != a} e^{s_ab} )`` with ``P(a)`` every other view of a's class.

Edge cases.  A class with a single sample in the batch: NSCL and SupCon both reduce to the
NT-Xent term for its anchors (no other same-class view exists).  A batch of one class:
NSCL has no negatives -- with the positive in the denominator every term is exactly 0,
without it the term is undefined (log of an empty sum) and such anchors are left out of
the mean (the loss is 0 if no anchor has a negative); SupCon treats all 2B-1 other views
as positives (well defined, >= log(2B-1)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def view_logits(z1: Tensor, z2: Tensor, tau: float) -> Tensor:
    """``s_ab = cos(z_a, z_b) / tau`` over the 2B views (view 1 rows first)."""
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"z1, z2 must be (B, d) of equal shape, got {z1.shape}, {z2.shape}")
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    return z @ z.T / tau


def _positives(s: Tensor) -> Tensor:
    """View a's positive, (a + B) mod 2B, made on ``s``'s device."""
    b = s.shape[0] // 2
    return torch.arange(2 * b, device=s.device).add_(b).remainder_(2 * b)


def nt_xent_from_logits(s: Tensor) -> Tensor:
    """NT-Xent from the (2B, 2B) view logits ``s`` (the diagonal is ignored)."""
    self_mask = torch.eye(s.shape[0], dtype=torch.bool, device=s.device)
    return F.cross_entropy(s.masked_fill(self_mask, float("-inf")), _positives(s))


def nscl_from_logits(s: Tensor, labels: Tensor, positive_in_denominator: bool = True) -> Tensor:
    """NSCL from the (2B, 2B) view logits ``s`` and the B sample labels."""
    y = torch.cat([labels, labels]).to(s.device)
    negative = y[:, None] != y[None, :]
    s_pos = s[torch.arange(s.shape[0], device=s.device), _positives(s)]
    neg_logits = s.masked_fill(~negative, float("-inf"))
    if positive_in_denominator:
        denom = torch.logsumexp(torch.cat([s_pos[:, None], neg_logits], dim=1), dim=1)
        return (denom - s_pos).mean()
    has_negative = negative.any(dim=1)
    if not has_negative.any():
        return s.sum() * 0.0
    terms = torch.logsumexp(neg_logits[has_negative], dim=1) - s_pos[has_negative]
    return terms.mean()


def supcon_from_logits(s: Tensor, labels: Tensor) -> Tensor:
    """SupCon (L^sup_out) from the (2B, 2B) view logits ``s`` and the B sample labels."""
    y = torch.cat([labels, labels]).to(s.device)
    self_mask = torch.eye(s.shape[0], dtype=torch.bool, device=s.device)
    positive = (y[:, None] == y[None, :]) & ~self_mask
    log_prob = s - torch.logsumexp(s.masked_fill(self_mask, float("-inf")), dim=1, keepdim=True)
    per_anchor = (log_prob * positive).sum(1) / positive.sum(1)
    return -per_anchor.mean()


def nt_xent(z1: Tensor, z2: Tensor, tau: float) -> Tensor:
    """NT-Xent / SimCLR loss over the 2B views (mean over anchors)."""
    return nt_xent_from_logits(view_logits(z1, z2, tau))


def nscl(
    z1: Tensor, z2: Tensor, labels: Tensor, tau: float, positive_in_denominator: bool = True
) -> Tensor:
    """Negatives-only supervised contrastive loss: same-class views leave the denominator."""
    return nscl_from_logits(view_logits(z1, z2, tau), labels, positive_in_denominator)


def supcon(z1: Tensor, z2: Tensor, labels: Tensor, tau: float) -> Tensor:
    """Supervised contrastive loss (Khosla et al. 2020, L^sup_out) over the 2B views."""
    return supcon_from_logits(view_logits(z1, z2, tau), labels)


__all__ = ["nt_xent", "nscl", "supcon", "view_logits", "nt_xent_from_logits",
           "nscl_from_logits", "supcon_from_logits"]
