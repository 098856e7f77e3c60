"""Effective Hessian of a batch loss with respect to the representation (G + K), and spectrum
summaries of symmetric operators."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.func import functional_call

from geobench.geometry.linalg import (
    LinearOperator,
    NegativeEstimate,
    lanczos,
    residual_floor,
    slq_negative,
)


def _ends_summary(lo: float, hi: float, zero: float) -> dict[str, float]:
    """Condition numbers from the spectrum's ends (see ``spectrum_summary``)."""
    small, large = sorted((abs(lo), abs(hi)))
    if large <= zero:
        cond_abs = math.nan
    else:
        cond_abs = math.inf if small <= zero else large / small
    return {"lambda_min": lo, "lambda_max": hi, "cond_abs": cond_abs}


def spectrum_summary(
    source: LinearOperator | Tensor,
    k: int = 1,
    dense_threshold: int = 2048,
    tol: float = 1e-6,
    max_iter: int | None = None,
    seed: int = 0,
    probes: int = 4,
    steps: int = 400,
    rtol: float | None = None,
    atol: float = 0.0,
) -> dict[str, float]:
    """Extremes, condition numbers and negative part of a symmetric spectrum.

    ``source`` is a vector of eigenvalues, a symmetric matrix, or a ``LinearOperator``.
    An eigenvalue counts as zero when |lambda| <= max(atol, rtol * max|lambda|) (default
    rtol = size * eps(dtype), numpy's ``matrix_rank`` rule).  Fields:

    - ``lambda_min``, ``lambda_max``: the spectrum's ends.
    - ``cond_abs``: max(|lambda_min|, |lambda_max|) / min(|lambda_min|, |lambda_max|), the
      ratio of the ends' magnitudes (for a definite spectrum, the condition number); inf
      when the smaller end is zero, NaN for the zero operator.
    - ``cond_pos``: lambda_max / (smallest positive eigenvalue); NaN if none is positive.
    - ``neg_count``, ``neg_mass``: number of eigenvalues < -zero and sum of their |lambda|.
    - ``neg_unresolved``: 0 when exact; for the estimate, the number of eigenvalues it
      could not sign, so neg_count <= true count <= neg_count + neg_unresolved up to the
      probe noise (standard deviation about sqrt(2 p (1 - p) size / probes) for a fraction
      p of negatives; each probe's bracket is exact).
    - ``exact``: 1.0 when computed from all eigenvalues, 0.0 for the estimates below;
      ``converged``: whether Lanczos met its tolerance; ``matvecs``: products used.

    An operator of size <= ``dense_threshold`` is formed densely (``dense()``: ``size``
    products), symmetrised and solved with ``torch.linalg.eigvalsh`` in float64 (O(size^3);
    seconds to tens of seconds at size 4096 on a CPU, see docs/performance.md). Larger ones
    get ``lanczos`` for the k extreme eigenvalues at both ends. Then cond_pos is exact when
    lambda_min > 0 and NaN otherwise (the smallest positive eigenvalue of a singular or
    indefinite spectrum is interior, beyond an extreme-eigenvalue solver); the negative
    count and mass are exactly 0 when Lanczos converged with lambda_min >= -zero, otherwise
    ``slq_negative`` estimates them: ``probes`` Rademacher probes of at most ``steps``
    Lanczos steps (each stops once its Gauss-Radau bracket closes), so at most probes *
    steps products. Its resolution is about max|lambda| / steps: eigenvalues closer to 0 are
    not counted in neg_count but in neg_unresolved, and for Hessians whose negative
    eigenvalues spread over many decades below max|lambda| (common here: train-mode
    BatchNorm heads, trained states) neg_count can be several times smaller than the dense
    count; raise ``dense_threshold`` where the count matters and the dense path is
    affordable.
    """
    if isinstance(source, LinearOperator):
        before = source.matvecs
        if source.size > dense_threshold:
            out = _lanczos_summary(source, k, tol, max_iter, seed, probes, steps, rtol, atol)
            return {**out, "matvecs": float(source.matvecs - before)}
        matrix = source.dense().to(torch.float64)
        eigenvalues = torch.linalg.eigvalsh((matrix + matrix.T) / 2)
        out = _exact_summary(eigenvalues, rtol, atol, source.dtype)
        return {**out, "matvecs": float(source.matvecs - before)}
    if source.dim() == 2:
        matrix = source.to(torch.float64)
        eigenvalues = torch.linalg.eigvalsh((matrix + matrix.T) / 2)
    else:
        eigenvalues = source.to(torch.float64)
    return {**_exact_summary(eigenvalues, rtol, atol, source.dtype), "matvecs": 0.0}


def _exact_summary(
    ev: Tensor, rtol: float | None, atol: float, dtype: torch.dtype
) -> dict[str, float]:
    ev = ev.detach().flatten().sort().values.cpu()
    rtol = ev.numel() * torch.finfo(dtype).eps if rtol is None else rtol
    zero = max(atol, rtol * float(ev.abs().max()))
    lo, hi = float(ev[0]), float(ev[-1])
    positive = ev[ev > zero]
    negative = ev[ev < -zero]
    return {
        **_ends_summary(lo, hi, zero),
        "cond_pos": hi / float(positive[0]) if positive.numel() else math.nan,
        "neg_count": float(negative.numel()),
        "neg_mass": float(negative.abs().sum()),
        "neg_unresolved": 0.0,
        "exact": 1.0,
        "converged": 1.0,
    }


def _lanczos_summary(
    op: LinearOperator,
    k: int,
    tol: float,
    max_iter: int | None,
    seed: int,
    probes: int,
    steps: int,
    rtol: float | None,
    atol: float,
) -> dict[str, float]:
    result = lanczos(
        op.matvec, op.size, k, "both", tol, max_iter, seed,
        device=op.device, floor_rtol=residual_floor(op.dtype),
    )
    lo, hi = float(result.eigenvalues[0]), float(result.eigenvalues[-1])
    rtol = op.size * torch.finfo(op.dtype).eps if rtol is None else rtol
    zero = max(atol, rtol * max(abs(lo), abs(hi)))
    if lo >= -zero and result.converged:
        cond_pos = hi / lo if lo > zero else math.nan
        negative = NegativeEstimate(0.0, 0.0, 0.0)
    else:
        cond_pos = math.nan
        negative = slq_negative(op.matvec, op.size, zero, probes, steps, seed, device=op.device)
    return {
        **_ends_summary(lo, hi, zero),
        "cond_pos": cond_pos,
        "neg_count": negative.count,
        "neg_mass": negative.mass,
        "neg_unresolved": negative.unresolved,
        "exact": 0.0,
        "converged": float(result.converged),
    }


def _frozen_head(head: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """The head as a pure function of its input, parameters and buffers held fixed.

    An ``nn.Module`` is called through ``torch.func.functional_call`` with detached
    parameters.  BatchNorm layers in train mode keep normalising with the batch statistics
    (so samples stay coupled, as in training) but act on a copy that does not track running
    statistics, leaving the caller's module untouched.  Train-mode dropout is refused: a
    random function has no Hessian.
    """
    if not isinstance(head, nn.Module):
        return head
    for module in head.modules():
        if isinstance(module, nn.modules.dropout._DropoutNd) and module.training and module.p:
            raise ValueError("dropout in train mode makes the head random: call head.eval()")
    batch_norms = [
        m for m in head.modules()
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats
    ]
    if batch_norms:
        head = copy.deepcopy(head)
        for module in head.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.training:
                module.track_running_stats = False
                module.running_mean = module.running_var = module.num_batches_tracked = None
    params = {name: p.detach() for name, p in head.named_parameters()}
    buffers = dict(head.named_buffers())
    return lambda z: functional_call(head, (params, buffers), (z,))


def _backward(out: Tensor, wrt: Tensor, v: Tensor, batched: bool = False) -> Tensor:
    """v^T d(out)/d(wrt) through a retained graph; exact zeros where out does not depend on wrt.

    ``batched``: v is a stack of directions (leading dimension) pulled back at once.
    """
    shape = (v.shape[0], *wrt.shape) if batched else wrt.shape
    if not out.requires_grad:
        return torch.zeros(shape, dtype=wrt.dtype, device=wrt.device)
    (result,) = torch.autograd.grad(
        out, wrt, v, retain_graph=True, allow_unused=True, is_grads_batched=batched
    )
    return torch.zeros(shape, dtype=wrt.dtype, device=wrt.device) if result is None else result


class EffectiveHessian:
    """Hessian of the batch loss with respect to the stacked representation, and its split.

    ``head`` maps the representation batch z (B, d) to head outputs h (B, m), applied to the
    whole batch (train-mode BatchNorm couples samples: this is the Hessian of the batch loss
    as trained); ``loss_of_h`` maps h to a scalar (a stop-gradient target is a constant
    inside it).  With f(z) = L(h(z)) over the flat B*d vector z, H_eff = G + K where

    - ``full``:         H_eff = d^2 f / dz^2.
    - ``gauss_newton``: G = J^T (d^2 L / dh^2) J with J = dh/dz, the pull-back metric.
    - ``interaction``:  K = sum_i [dL/dh]_i d^2 h_i / dz^2, the head's curvature weighted
      by the loss gradient: the Hessian of z -> <g, h(z)> with g = dL/dh at h(z) held
      constant.  K is computed on its own (not as H - G), so H_eff = G + K is a checkable
      identity.  K is exactly 0 for a head that is linear in z (linear layers, ReLU away
      from its kinks, eval-mode BatchNorm); train-mode BatchNorm is itself curved in z, so
      K != 0 there even for ReLU heads.

    Products are double backward passes through graphs built once here (Pearlmutter):
    the graphs of grad f, of J^T u (linear in a dummy u, so its derivative in u gives J v),
    of dL/dh and of grad <g, h>.  H v = d(grad f . v)/dz, G v = J^T (H_h (J v)) and
    K v = d(grad <g, h> . v)/dz each cost one to three backward passes and no forward pass:
    about 0.5-4 gradients of the loss on the CPU, where ``torch.func`` jvp-of-grad (forward
    over reverse, redone per product) cost 20-40 (``benchmarks/hessian.py``).  The graphs
    are held while the object lives.  Each operator is a ``LinearOperator`` in z's dtype
    and device (cast the head and z to float64 for accurate spectra); parameters of an
    ``nn.Module`` head are held fixed.
    """

    def __init__(
        self,
        head: Callable[[Tensor], Tensor],
        loss_of_h: Callable[[Tensor], Tensor],
        z: Tensor,
    ) -> None:
        self.z = z.detach()
        self.size = self.z.numel()
        frozen = _frozen_head(head)
        with torch.enable_grad():
            self._z = self.z.reshape(-1).clone().requires_grad_(True)
            self._h = frozen(self._z.reshape(self.z.shape))
            self.h = self._h.detach()
            self._grad_f = _grad(loss_of_h(self._h), self._z)
            self._u = torch.zeros_like(self.h, requires_grad=True)
            self._jt_u = _grad(self._h, self._z, self._u)
            self._h_leaf = self.h.clone().requires_grad_(True)
            self._grad_l = _grad(loss_of_h(self._h_leaf), self._h_leaf)
            self.loss_grad = self._grad_l.detach()
            self._grad_lin = _grad(self._h, self._z, self.loss_grad)

        def op(matvec: Callable[[Tensor, bool], Tensor]) -> LinearOperator:
            return LinearOperator(
                lambda v: matvec(v, False), self.size, z.dtype, z.device,
                matmat=lambda vs: matvec(vs, True),
            )

        self.full = op(lambda v, b: _backward(self._grad_f, self._z, v, b))
        self.gauss_newton = op(self._gauss_newton)
        self.interaction = op(lambda v, b: _backward(self._grad_lin, self._z, v, b))

    def _gauss_newton(self, v: Tensor, batched: bool) -> Tensor:
        jv = _backward(self._jt_u, self._u, v, batched)
        hjv = _backward(self._grad_l, self._h_leaf, jv, batched)
        return _backward(self._h, self._z, hjv, batched)

    @property
    def operators(self) -> dict[str, LinearOperator]:
        """``{"full": H_eff, "gauss_newton": G, "interaction": K}``."""
        return {"full": self.full, "gauss_newton": self.gauss_newton,
                "interaction": self.interaction}

    def summary(
        self, k: int = 1, dense_threshold: int = 2048, **options
    ) -> dict[str, dict[str, float]]:
        """``spectrum_summary`` of H_eff, G and K: exact (dense eigvalsh) when B*d <=
        ``dense_threshold``, else Lanczos extremes and an SLQ estimate of the negative part;
        ``options`` are passed on (tol, max_iter, seed, probes, steps, rtol, atol)."""
        return {
            name: spectrum_summary(op, k=k, dense_threshold=dense_threshold, **options)
            for name, op in self.operators.items()
        }


def _grad(out: Tensor, wrt: Tensor, v: Tensor | None = None) -> Tensor:
    """d(v . out)/d(wrt) with its own graph kept (create_graph); zeros if out ignores wrt."""
    if not out.requires_grad:
        return torch.zeros_like(wrt)
    (result,) = torch.autograd.grad(out, wrt, v, create_graph=True, allow_unused=True)
    return torch.zeros_like(wrt) if result is None else result
