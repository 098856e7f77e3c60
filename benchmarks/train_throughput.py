"""Training throughput of a SimCLR ResNet-18 step on CIFAR-shaped images (3x32x32) on the
current device, for each combination of the run options ``precision`` (fp32, bf16),
``channels_last`` and ``compile``, against a plain torch loop (fp32, eager) measured in
the same run. Prints images/s and the ratio to the plain loop, and writes the figures to
``benchmarks/results/train_throughput_<device>.json`` (the cost estimates of ``geobench
show`` read ``calibration_<device>.json``, which ``benchmarks/calibrate.py`` writes).

    python benchmarks/train_throughput.py [--batch 256] [--steps 20] [--no-compile]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import tempfile
import time
from pathlib import Path

import torch

from geobench.contract.api import Arm, BuildContext
from geobench.contract.plugins import registry
from geobench.suite import expand, load_suite
from geobench.train.engine import run_cell
from geobench.train.loader import batches

SUITE = """\
name: train_throughput
base:
  data: {{name: digits, size: 32, channels: 3, batch_size: {batch}}}
  augment: {{name: simclr}}
  backbone: {{name: timm, model: resnet18, cifar_stem: true}}
  head: {{name: mlp, depth: 2, hidden: 512, out: 128}}
  objective: {{name: cl, tau: 0.5}}
  optimizer: {{name: sgd, lr: 0.1, momentum: 0.9}}
  train: {{steps: {steps}, device: {device}, precision: {precision},
          channels_last: {channels_last}, compile: {compile}}}
"""
RESULTS = Path(__file__).parent / "results"


def _cell(args, **options):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "suite.yaml"
        path.write_text(SUITE.format(batch=args.batch, steps=args.steps, device=args.device,
                                     **{k: str(v).lower() for k, v in options.items()}))
        return expand(load_suite(path), registry())[0]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def plain_loop(cell, device: str) -> float:
    """Seconds per step of the same SimCLR step written directly in torch."""
    reg, spec, seed = registry(), cell.arms["main"], cell.trial_seed
    dev = torch.device(device)
    data = reg.build("datasets", spec["data"], BuildContext(seed, torch.device("cpu"))).to(dev)
    ctx = BuildContext(seed, dev, data)
    augment = reg.build("augmentations", spec["augment"], ctx)
    backbone = reg.build("backbones", spec["backbone"], ctx)
    ctx.feature_dim = backbone.feature_dim
    head = reg.build("heads", spec["head"], ctx)
    ctx.embed_dim = head.out_dim
    arm = Arm(backbone, head, reg.build("objectives", spec["objective"], ctx)).to(dev)
    opt = torch.optim.SGD(arm.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    stamps = []
    for batch in batches(data, seed, spec["train"]["steps"]):
        views = [augment(batch.x, batch.index, gen, view=v) for v in range(2)]
        opt.zero_grad(set_to_none=True)
        arm.objective(arm, batch, views).backward()
        opt.step()
        _sync(device)
        stamps.append(time.perf_counter())
    warm = min(3, len(stamps) - 2)
    return (stamps[-1] - stamps[warm]) / (len(stamps) - 1 - warm)


def engine_step(cell, device: str) -> float:
    """Seconds per step of the engine, between its progress reports (after warm-up)."""
    stamps: list[tuple[int, float]] = []

    def progress(step, total, loss):
        _sync(device)
        stamps.append((step, time.perf_counter()))

    result = run_cell(cell, progress=progress)
    assert result.status == "complete", result.traceback
    (s0, t0), (s1, t1) = stamps[0], stamps[-1]
    return (t1 - t0) / (s1 - s0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=30, help="steps per measurement (>= 20)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile: true rows")
    args = ap.parse_args()
    images = 2 * args.batch  # two views per sample
    base = _cell(args, precision="fp32", channels_last=False, compile=False)
    plain = min(plain_loop(base, args.device) for _ in range(2))  # the less disturbed run
    name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor()
    print(f"device: {args.device} ({name or 'cpu'}), batch {args.batch} x 2 views, "
          f"{args.steps} steps")
    print(f"{'plain torch loop (fp32, eager)':<44} {images / plain:9.1f} img/s   ratio 1.000")
    rows = {"plain": images / plain}
    for precision, cl, comp in itertools.product(("fp32", "bf16"), (False, True), (False, True)):
        if comp and args.no_compile:
            continue
        cell = _cell(args, precision=precision, channels_last=cl, compile=comp)
        per_step = engine_step(cell, args.device)
        label = f"engine precision={precision} channels_last={cl} compile={comp}"
        rows[label] = images / per_step
        print(f"{label:<44} {images / per_step:9.1f} img/s   ratio {plain / per_step:.3f}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"train_throughput_{args.device}.json"
    out.write_text(json.dumps({"device": args.device, "name": name, "batch": args.batch,
                               "images_per_s": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
