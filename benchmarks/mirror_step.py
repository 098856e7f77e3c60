"""Optimizer step time: MirrorDescent (hypentropy, pnorm, ...), eager and compiled, vs SGD.

Every optimizer steps its own copy of the parameters of the same model (a bias-free ReLU
MLP, a bias-free VGG-16 with ``--model vgg16``, timm's ResNet-18 with ``--model
resnet18``, 11.69 M parameters, no download; ``--model tensors62``: 62 weights of 4 x 4,
ResNet-18's tensor count with almost no arithmetic, so a step is its per-tensor bookkeeping
and dispatch, the part that dominates a GPU step) with the same fixed gradients; only
``optimizer.step()`` is timed.  Baselines measured in the same run:

- ``sgd``: ``torch.optim.SGD(foreach=True)`` (the multi-tensor implementation; on CPU the
  default is the per-tensor loop);
- ``loop hypentropy``: the mirror step written per tensor (asinh, subtract, sinh for every
  parameter in a Python loop), what a direct transcription of the update costs.

Each map is timed eager and with ``MirrorDescent(compile=True)`` (compiled during the
warm-up, tens of seconds per map on a CPU; ``--eager-only`` skips it).  Prints the CPU (or
GPU) and the SIMD level torch dispatches to, ms per step and the ratio to SGD (and, for
scale, one forward + backward pass of the model on a batch of 256); repeats alternate
between the optimizers so that machine noise hits all alike, and the median is reported.
One thread unless ``--threads`` says otherwise.  ``ATEN_CPU_CAPABILITY=avx2`` (or
``default``, no SIMD) makes torch dispatch to a lower level than the CPU has.

``--json`` prints one JSON object instead, ``{"device": ..., "params": N, "sgd_ms": x,
"eager": {"<map>": MirrorDescent ms / SGD ms, ...}, "compiled": {...}}`` for the maps
euclidean, hypentropy(0.1), pnorm(3) and shifted_pnorm(3, 0.1), without the loop baseline
and the forward + backward pass; its default model is resnet18.

    OMP_NUM_THREADS=1 python benchmarks/mirror_step.py              # MLP 4 x 256, CPU
    OMP_NUM_THREADS=1 python benchmarks/mirror_step.py --json       # ResNet-18, JSON
    python benchmarks/mirror_step.py --big                          # MLP 8 x 2048
    python benchmarks/mirror_step.py --model vgg16 --device cuda
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch
from geobench_mirror import MirrorDescent, maps
from torch import Tensor, nn

from geobench.run.provenance import cpu_model

LR = 1e-3
MAPS = {
    "euclidean": maps.euclidean(),
    "hypentropy": maps.hypentropy(0.1),
    "pnorm3": maps.pnorm(3.0),
    "shifted_pnorm": maps.shifted_pnorm(3.0, 0.1),
}


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


def resnet18() -> nn.Module:
    import timm

    return timm.create_model("resnet18", pretrained=False)


def copy_params(params: list[Tensor]) -> list[Tensor]:
    """A copy of the parameters sharing their gradients (each optimizer steps its own)."""
    copies = [nn.Parameter(p.detach().clone()) for p in params]
    for c, p in zip(copies, params, strict=True):
        c.grad = p.grad
    return copies


def time_steps(opt: torch.optim.Optimizer, steps: int, device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - start) / steps


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's model and the SIMD level torch dispatches to."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()


def median_times(optimizers: dict[str, torch.optim.Optimizer], steps: int, repeats: int,
                 device: torch.device) -> dict[str, float]:
    """Median ms per step of each optimizer over alternating repeats (after a warm-up)."""
    for opt in optimizers.values():  # warm up (allocates the dual variables)
        time_steps(opt, 2, device)
    times: dict[str, list[float]] = {name: [] for name in optimizers}
    for _ in range(repeats):
        for name, opt in optimizers.items():
            times[name].append(time_steps(opt, steps, device))
    return {name: statistics.median(values) for name, values in times.items()}


def forward_backward_ms(model: nn.Module, batch: Tensor, device: torch.device) -> float:
    values = []
    for _ in range(3):
        start = time.perf_counter()
        model(batch).square().mean().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        values.append(1e3 * (time.perf_counter() - start))
    return statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["mlp", "vgg16", "resnet18", "tensors62"],
                    help="default: mlp, or resnet18 with --json")
    ap.add_argument("--big", action="store_true", help="MLP 8 x 2048 instead of 4 x 256")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--steps", type=int, help="steps per timed repeat (default 50, 10 for "
                                              "vgg16 and resnet18)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--eager-only", action="store_true",
                    help="skip MirrorDescent(compile=True) (compiled during the warm-up)")
    ap.add_argument("--json", action="store_true", help="print one JSON object (see above)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    name = args.model or ("resnet18" if args.json else "mlp")
    steps = args.steps or (10 if name in ("vgg16", "resnet18") else 50)
    device = torch.device(args.device)
    builders: dict[str, Callable[[], nn.Module]] = {
        "mlp": lambda: mlp(8, 2048) if args.big else mlp(4, 256),
        "vgg16": vgg16, "resnet18": resnet18, "tensors62": lambda: mlp(62, 4)}
    torch.manual_seed(0)
    model = builders[name]().to(device)
    params = list(model.parameters())
    for p in params:  # small fixed gradients: the parameters stay in range over all steps
        p.grad = 1e-6 * torch.randn_like(p)
    n = sum(p.numel() for p in params)

    optimizers: dict[str, torch.optim.Optimizer] = {
        "sgd": torch.optim.SGD(copy_params(params), lr=LR, foreach=True)}
    modes = {"eager": False} if args.eager_only else {"eager": False, "compiled": True}
    for mode, compiled in modes.items():
        for key, mirror_map in MAPS.items():
            optimizers[f"{key} {mode}"] = MirrorDescent(copy_params(params), lr=LR,
                                                        mirror_map=mirror_map,
                                                        compile=compiled)
    if not args.json:
        optimizers["loop hypentropy"] = LoopHypentropy(copy_params(params), lr=LR, lam=0.1)
    ms = median_times(optimizers, steps, args.repeats, device)
    base = ms["sgd"]
    if args.json:
        ratios = {mode: {key: round(ms[f"{key} {mode}"] / base, 3) for key in MAPS}
                  for mode in modes}
        print(json.dumps({"device": device_name(device), "params": n,
                          "sgd_ms": round(base, 3), **ratios}))
        return

    print(f"{name}{' (big)' if args.big else ''} on {device_name(device)}, "
          f"{args.threads} thread(s): {len(params)} tensors, {n / 1e6:.2f} M parameters, "
          f"{steps} steps x {args.repeats} repeats")
    print(f"{'optimizer':38s} " + " ".join(f"{mode + ' ms':>12s} {'x SGD':>7s}"
                                           for mode in modes))
    print(f"{'sgd (foreach)':38s} {base:12.3f} {1.0:7.2f}")
    for key, mirror_map in MAPS.items():
        cells = [ms[f"{key} {mode}"] for mode in modes]
        print(f"{'mirror ' + repr(mirror_map):38s} "
              + " ".join(f"{value:12.3f} {value / base:7.2f}" for value in cells))
    loop = ms["loop hypentropy"]
    print(f"{'loop hypentropy':38s} {loop:12.3f} {loop / base:7.2f}")
    shape = {"mlp": (256, 2048 if args.big else 256), "tensors62": (256, 4)}.get(
        name, (256, 3, 32, 32))
    fwd_bwd = forward_backward_ms(model, torch.randn(shape, device=device), device)
    print(f"{'(forward + backward, batch 256)':38s} {fwd_bwd:12.3f} {fwd_bwd / base:7.2f}")
    print("vectorised hypentropy vs per-tensor loop: "
          f"{loop / ms['hypentropy eager']:.2f}x faster")


if __name__ == "__main__":
    main()
