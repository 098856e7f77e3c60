"""Optimizer step time: MirrorDescent (hypentropy, pnorm, ...) vs torch.optim.SGD.

Every optimizer steps the parameters of the same model (a bias-free ReLU MLP, or a
bias-free VGG-16 with ``--model vgg16``) with the same fixed gradients; only
``optimizer.step()`` is timed.  Baselines measured in the same run:

- ``sgd``: ``torch.optim.SGD`` (foreach implementation, the PyTorch default);
- ``loop hypentropy``: the mirror step written per tensor (asinh, subtract, sinh for every
  parameter in a Python loop), what a direct transcription of the update costs.

Prints ms per step and the ratio to SGD (and, for scale, one forward + backward pass of the
model on a batch of 256); repeats alternate between the optimizers so that machine noise
hits all alike, and the median is reported.

    OMP_NUM_THREADS=1 python benchmarks/mirror_step.py              # MLP 4 x 256, CPU
    python benchmarks/mirror_step.py --big                          # MLP 8 x 2048
    python benchmarks/mirror_step.py --model vgg16 --device cuda
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from geobench_mirror import MirrorDescent, maps
from torch import nn


class LoopHypentropy(torch.optim.Optimizer):
    """The hypentropy mirror step, tensor by tensor (the per-parameter reference)."""

    def __init__(self, params, lr: float, lam: float) -> None:
        super().__init__(params, {"lr": lr, "lam": lam})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                u = torch.asinh(p / group["lam"]) - group["lr"] * p.grad
                p.copy_(group["lam"] * torch.sinh(u))


def mlp(depth: int, width: int) -> nn.Module:
    layers: list[nn.Module] = []
    for i in range(depth):
        layers.append(nn.Linear(width, width, bias=False))
        if i < depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def vgg16() -> nn.Module:
    from geobench_timm.vgg import HomogeneousVGG16, VGGParams

    return HomogeneousVGG16(3, 32, 10, VGGParams())


def time_steps(opt: torch.optim.Optimizer, steps: int, device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - start) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["mlp", "vgg16"], default="mlp")
    ap.add_argument("--big", action="store_true", help="MLP 8 x 2048 instead of 4 x 256")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=50, help="steps per timed repeat")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    device = torch.device(args.device)
    model = vgg16() if args.model == "vgg16" else mlp(8, 2048) if args.big else mlp(4, 256)
    params = list(model.to(device).parameters())
    for p in params:  # small fixed gradients: the parameters stay in range over all steps
        p.grad = 1e-6 * torch.randn_like(p)
    n = sum(p.numel() for p in params)
    print(f"{args.model}{' (big)' if args.big else ''} on {device}: {len(params)} tensors, "
          f"{n / 1e6:.2f} M parameters, {args.steps} steps x {args.repeats} repeats")

    lr = 1e-3
    optimizers = {
        "sgd": torch.optim.SGD(params, lr=lr),
        "mirror euclidean": MirrorDescent(params, lr=lr, mirror_map=maps.euclidean()),
        "mirror hypentropy": MirrorDescent(params, lr=lr, mirror_map=maps.hypentropy(0.1)),
        "mirror pnorm(3)": MirrorDescent(params, lr=lr, mirror_map=maps.pnorm(3.0)),
        "mirror shifted_pnorm(3, 0.1)": MirrorDescent(params, lr=lr,
                                                      mirror_map=maps.shifted_pnorm(3.0, 0.1)),
        "loop hypentropy": LoopHypentropy(params, lr=lr, lam=0.1),
    }
    for opt in optimizers.values():  # warm up (allocates the dual variables)
        time_steps(opt, 2, device)
    times: dict[str, list[float]] = {name: [] for name in optimizers}
    for _ in range(args.repeats):
        for name, opt in optimizers.items():
            times[name].append(time_steps(opt, args.steps, device))
    batch = torch.randn(256, 3, 32, 32) if args.model == "vgg16" else torch.randn(256, 256)
    batch = batch.to(device)
    fwd_bwd = []
    for _ in range(3):
        start = time.perf_counter()
        model(batch).square().mean().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        fwd_bwd.append(1e3 * (time.perf_counter() - start))
    base = statistics.median(times["sgd"])
    print(f"{'optimizer':30s} {'ms/step':>9s} {'x SGD':>7s}")
    for name, values in times.items():
        ms = statistics.median(values)
        print(f"{name:30s} {ms:9.3f} {ms / base:7.2f}")
    ms = statistics.median(fwd_bwd)
    print(f"{'(forward + backward, batch 256)':30s} {ms:9.3f} {ms / base:7.2f}")
    loop = statistics.median(times["loop hypentropy"])
    vec = statistics.median(times["mirror hypentropy"])
    print(f"vectorised hypentropy vs per-tensor loop: {loop / vec:.2f}x faster")


if __name__ == "__main__":
    main()
