"""Linear CKA: the feature-space path vs the N x N Gram formula vs minibatch accumulation.

For each N (d features on both sides; Y is a noisy linear map of X) this times, in the same
run and on the same data:

- ``feature``: ``geobench.geometry.linear_cka`` (d x d cross-covariances, O(N d^2) time,
  O(d^2) memory), biased and debiased;
- ``gram``: the textbook form <HKH, HLH> / (||HKH|| ||HLH||) with K = X X^T, L = Y Y^T in
  float64 (O(N^2 d) time, two N x N float64 matrices); run only when ``--gram-max`` allows
  it -- at N = 50k the two Grams alone take 40 GB;
- ``minibatch``: ``geobench.geometry.MinibatchCKA`` over batches of ``--batch`` rows (the
  accumulation usable during training), compared with the full debiased CKA.

Memory columns are analytic (bytes of the dominant float64 buffers), not measured.

    python benchmarks/cka.py                      # N = 1000, 10000 at d = 512
    python benchmarks/cka.py --sizes 1000 10000 50000 --gram-max 50000   # needs ~45 GB
"""

from __future__ import annotations

import argparse
import time

import torch

from geobench.geometry import MinibatchCKA, linear_cka


def gram_cka(X: torch.Tensor, Y: torch.Tensor) -> float:
    """The N x N reference: centred Gram matrices, elementwise inner products, float64."""
    def centred_gram(Z: torch.Tensor) -> torch.Tensor:
        Z = Z.to(torch.float64)
        G = Z @ Z.T
        G -= G.mean(0, keepdim=True)
        G -= G.mean(1, keepdim=True)
        return G

    K = centred_gram(X)
    L = centred_gram(Y)
    k, l_ = K.view(-1), L.view(-1)
    return float(torch.dot(k, l_) / (torch.dot(k, k).sqrt() * torch.dot(l_, l_).sqrt()))


def timed(repeats: int, fn, *args) -> tuple[float, float]:
    """(best seconds, value) over ``repeats`` calls of ``fn(*args)``."""
    best, value = float("inf"), float("nan")
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, value


def minibatch(X: torch.Tensor, Y: torch.Tensor, size: int) -> float:
    acc = MinibatchCKA()
    for s in range(0, X.shape[0] - size + 1, size):
        acc.update(X[s : s + size], Y[s : s + size])
    return acc.value()


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.3g} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.3g} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--gram-max", type=int, default=10000,
                        help="largest N for which the N x N Gram path is run")
    parser.add_argument("--batch", type=int, default=256, help="minibatch CKA batch size")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    d = args.dim
    print(f"linear CKA, d = {d}, float32 inputs, float64 accumulation, "
          f"{args.threads} thread(s), best of {args.repeats}")
    header = (f"{'N':>7} {'feature s':>10} {'debiased s':>10} {'gram s':>9} {'gram/feat':>9} "
              f"{'|diff|':>8} {'mem feature':>12} {'mem gram':>10} {'minibatch s':>11} "
              f"{'CKA_mb':>7} {'CKA_u':>7}")
    print(header)
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        X = torch.randn(n, d, generator=g)
        Y = X @ (torch.randn(d, d, generator=g) / d**0.5) + torch.randn(n, d, generator=g)
        t_feat, v_feat = timed(args.repeats, linear_cka, X, Y)
        t_deb, v_deb = timed(args.repeats, linear_cka, X, Y, True)
        t_mb, v_mb = timed(args.repeats, minibatch, X, Y, args.batch)
        mem_feat = 3 * (d * d) * 8 + min(n, 8192) * 2 * d * 8
        mem_gram = 2 * n * n * 8
        if n <= args.gram_max:
            t_gram, v_gram = timed(1, gram_cka, X, Y)
            gram_cols = f"{t_gram:9.3f} {t_gram / t_feat:9.1f} {abs(v_gram - v_feat):8.1e}"
        else:
            gram_cols = f"{'skipped':>9} {'-':>9} {'-':>8}"
        print(f"{n:7d} {t_feat:10.3f} {t_deb:10.3f} {gram_cols} {gib(mem_feat):>12} "
              f"{gib(mem_gram):>10} {t_mb:11.3f} {v_mb:7.4f} {v_deb:7.4f}")
    print("mem: analytic size of the dominant float64 buffers (feature: three d x d "
          "covariances + one row chunk; gram: K and L)")


if __name__ == "__main__":
    main()
