"""Effective Hessian spectra: Lanczos extremes vs the dense Hessian, and the cost of a product.

Setting: a projection head (Linear d->hidden, BatchNorm in train mode, GELU, Linear
hidden->m) on a representation batch z of B rows (B*d = 256 ... 8192 at d = 64), with a
SimSiam-like loss: negative cosine similarity of each half of the batch against the other
half's head outputs held constant (stop-gradient).

1. For each B*d, the extreme eigenvalues of H_eff by ``EffectiveHessian(...).full.eigs``
   (Lanczos, both ends, tol 1e-6) vs the dense route (``full.dense()``: B*d products in
   blocks, then ``torch.linalg.eigvalsh`` in float64): time, matrix-vector products,
   their ratio, and the relative difference of the extremes.  The dense route is skipped
   above ``--dense-max`` (the B*d x B*d float64 matrix and eigvalsh's O((B*d)^3) time).
2. The cost of one product H v, G v, K v relative to one gradient of the loss w.r.t. z
   (a fresh forward and backward pass): Pearlmutter's trick makes it a small constant.
   For comparison, H v by ``torch.func`` forward-over-reverse (jvp of grad), rebuilt per
   product, and the one-time cost of building the retained graphs.

    python benchmarks/hessian.py            # B*d = 256 ... 2048, about a minute
    python benchmarks/hessian.py --full     # B*d = 256 ... 8192, dense up to --dense-max;
                                            # about 5 minutes on one CPU thread
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch
import torch.nn.functional as F
from tabulate import tabulate
from torch import nn
from torch.func import grad, jvp

from geobench.geometry import EffectiveHessian


def setting(batch: int, d: int, hidden: int, m: int, dtype: torch.dtype, seed: int = 0):
    """(head, loss_of_h, z): a train-mode BN/GELU head and a stop-gradient cosine loss."""
    torch.manual_seed(seed)
    head = nn.Sequential(
        nn.Linear(d, hidden), nn.BatchNorm1d(hidden), nn.GELU(), nn.Linear(hidden, m)
    ).to(dtype)
    z = torch.randn(batch, d, dtype=dtype)
    with torch.no_grad():
        h = head(z)
    half = batch // 2
    target = torch.cat([h[half:], h[:half]])  # each half against the other, held constant

    def loss(out: torch.Tensor) -> torch.Tensor:
        return -F.cosine_similarity(out, target, dim=1).mean()

    return head, loss, z


def best_time(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def spectrum_row(batch: int, args: argparse.Namespace) -> list:
    head, loss, z = setting(batch, args.d, args.hidden, args.m, args.dtype)
    size = batch * args.d
    eff = EffectiveHessian(head, loss, z)
    op = eff.full
    start = time.perf_counter()
    extremes = op.eigs(which="both", tol=args.tol)
    t_lanczos, n_lanczos = time.perf_counter() - start, op.matvecs
    if size > args.dense_max:
        mb = size * size * 8 / 2**20
        return [size, f"{t_lanczos:.2f}", n_lanczos, f"skipped: > --dense-max ({mb:.0f} MB)",
                "", "", ""]
    op.matvecs = 0
    start = time.perf_counter()
    dense = op.dense().to(torch.float64)
    exact = torch.linalg.eigvalsh((dense + dense.T) / 2)
    t_dense = time.perf_counter() - start
    err = float(((extremes - exact[[0, -1]]).abs() / exact[[0, -1]].abs()).max())
    return [size, f"{t_lanczos:.2f}", n_lanczos, f"{t_dense:.2f}", op.matvecs,
            f"{t_dense / t_lanczos:.1f}x", f"{err:.1e}"]


def product_costs(batch: int, args: argparse.Namespace) -> list:
    head, loss, z = setting(batch, args.d, args.hidden, args.m, args.dtype)

    def gradient() -> torch.Tensor:
        leaf = z.detach().requires_grad_(True)
        return torch.autograd.grad(loss(head(leaf)), leaf)[0]

    t_grad = best_time(gradient, args.repeats)
    t_build = best_time(lambda: EffectiveHessian(head, loss, z), 3)
    eff = EffectiveHessian(head, loss, z)
    v = torch.randn(z.numel(), dtype=args.dtype)
    costs = [best_time(lambda o=o: o.matvec(v), args.repeats) / t_grad
             for o in (eff.full, eff.gauss_newton, eff.interaction)]
    frozen = {k: p.detach() for k, p in head.named_parameters()}
    no_stats = nn.Sequential(*head).train()
    no_stats[1] = nn.BatchNorm1d(args.hidden, track_running_stats=False).to(args.dtype)
    f = lambda zf: loss(torch.func.functional_call(no_stats, frozen, (zf.view_as(z),)))  # noqa: E731
    t_func = best_time(lambda: jvp(grad(f), (z.reshape(-1),), (v,)), args.repeats)
    return [batch * args.d, f"{t_grad * 1e3:.2f}", *(f"{c:.2f}" for c in costs),
            f"{t_func / t_grad:.2f}", f"{t_build / t_grad:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="B*d up to 8192")
    parser.add_argument("--sizes", type=int, nargs="*", help="batch sizes B (overrides)")
    parser.add_argument("--d", type=int, default=64, help="representation dimension")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--m", type=int, default=64, help="head output dimension")
    parser.add_argument("--dense-max", type=int, default=4096, help="largest B*d done densely")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--float64", action="store_true", help="head and z in float64")
    args = parser.parse_args()
    args.dtype = torch.float64 if args.float64 else torch.float32
    batches = args.sizes or ([4, 8, 16, 32, 64, 128] if args.full else [4, 8, 16, 32])
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch's jvp decompositions
    print(f"head {args.d}->{args.hidden}(BN, GELU)->{args.m}, {args.dtype}, "
          f"{torch.get_num_threads()} threads")

    rows = [spectrum_row(b, args) for b in batches]
    print("\nExtreme eigenvalues of H_eff: Lanczos vs dense + eigvalsh")
    print(tabulate(rows, headers=["B*d", "lanczos s", "lanczos mv", "dense s", "dense mv",
                                  "dense/lanczos", "rel diff"], disable_numparse=True))

    rows = [product_costs(b, args) for b in batches]
    print("\nCost of one product, in gradients of the loss w.r.t. z (fresh forward + backward)")
    print(tabulate(rows, headers=["B*d", "grad ms", "H v", "G v", "K v",
                                  "H v (torch.func jvp)", "build graphs"],
                   disable_numparse=True))


if __name__ == "__main__":
    main()
