"""Training throughput of a SimCLR ResNet-18 step on CIFAR-shaped images (3x32x32) on the
current device, per run option (``precision`` fp32 / tf32 / bf16, ``channels_last``,
``compile``): the engine against a hand-written torch loop with the same option, both
against the plain loop (fp32, eager) measured in the same run.

Each row times two things separately: the warm-up (start to step 10: building, cuDNN
autotuning, compiling) and the steady state (step 10 to the end, images per second). Both
loops read their losses back every 10 steps (the engine's divergence check; the hand loop
does the same, as a real loop logs its loss), so neither waits for the device more often.
Rows print as they finish and the JSON file is rewritten after each, so a run stopped by a
time limit keeps what it measured.

    python benchmarks/train_throughput.py [--batch 256] [--steps 40] [--all | --options ...]

Options are written like ``bf16+cl+compile`` (``cl``: channels-last). The default list is
the eager rows plus the compiled rows most likely to be fastest; ``--all`` runs all twelve.
Figures go to ``benchmarks/results/train_throughput_<device>.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from geobench.contract.interfaces import Arm, BuildContext
from geobench.contract.manager import registry
from geobench.records import Cell
from geobench.study import Study
from geobench.train.engine import CHECK_EVERY, run_cell
from geobench.train.loader import batches
from geobench.train.precision import fp32_matmuls

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
DEFAULT = ["fp32", "fp32+cl", "tf32", "tf32+cl", "bf16", "bf16+cl", "bf16+cl+compile",
           "tf32+cl+compile", "fp32+compile"]
RESULTS = Path(__file__).parent / "results"


def parse(option: str) -> dict[str, object]:
    """``bf16+cl+compile`` -> the train spec's precision, channels_last and compile."""
    parts = option.split("+")
    if parts[0] not in ("fp32", "tf32", "bf16") or not set(parts[1:]) <= {"cl", "compile"}:
        raise SystemExit(f"--options: {option!r} is not PRECISION[+cl][+compile] with "
                         "PRECISION one of fp32, tf32, bf16")
    return {"precision": parts[0], "channels_last": "cl" in parts, "compile": "compile" in parts}


def make_cell(args: argparse.Namespace, option: str) -> Cell:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "suite.yaml"
        path.write_text(SUITE.format(batch=args.batch, steps=args.steps, device=args.device,
                                     **{k: str(v).lower() for k, v in parse(option).items()}))
        return Study.open(path).cells[0]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def hand_loop(cell: Cell, device: str, option: str) -> tuple[float, float]:
    """The same SimCLR step written directly in torch with the same option: (warm-up
    seconds to step 10, seconds per step after it)."""
    began = time.perf_counter()
    opts = parse(option)
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
    if opts["channels_last"]:
        arm.to(memory_format=torch.channels_last)
    def loss_fn(batch, views):
        return arm.objective(arm, batch, views)

    if opts["compile"]:
        loss_fn = torch.compile(loss_fn)
    opt = torch.optim.SGD(arm.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    stamps, losses = [], []
    tf32 = fp32_matmuls("tf32") if opts["precision"] == "tf32" else nullcontext()
    with tf32:
        for batch in batches(data, seed, spec["train"]["steps"]):
            views = [augment(batch.x, batch.index, gen, view=v) for v in range(2)]
            if opts["channels_last"]:
                views = [v.contiguous(memory_format=torch.channels_last) for v in views]
            opt.zero_grad(set_to_none=True)
            with torch.autocast(dev.type, torch.bfloat16, enabled=opts["precision"] == "bf16"):
                loss = loss_fn(batch, views)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
            if (batch.step + 1) % CHECK_EVERY == 0:
                torch.stack(losses).cpu()  # what the engine's divergence check reads
                losses = []
                stamps.append((batch.step + 1, time.perf_counter()))
    return _split(began, stamps)


def engine_loop(cell: Cell, device: str) -> tuple[float, float]:
    """The engine: (warm-up seconds to step 10, seconds per step after it), from its
    progress reports (made after each check, every 10 steps)."""
    stamps: list[tuple[int, float]] = []
    began = time.perf_counter()
    result = run_cell(cell, progress=lambda step, total, loss: stamps.append(
        (step, time.perf_counter())))
    assert result.status == "complete", result.traceback
    return _split(began, stamps)


def _split(began: float, stamps: list[tuple[int, float]]) -> tuple[float, float]:
    (s0, t0), (s1, t1) = stamps[0], stamps[-1]
    if s1 == s0:
        raise SystemExit("--steps must be at least 20")
    return t0 - began, (t1 - t0) / (s1 - s0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=40, help="steps per measurement (>= 20)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--options", nargs="+", default=DEFAULT)
    ap.add_argument("--all", action="store_true", help="every combination of the options")
    args = ap.parse_args()
    options = args.options
    if args.all:
        options = ["+".join(p for p in combo if p) for combo in itertools.product(
            ("fp32", "tf32", "bf16"), ("", "cl"), ("", "compile"))]
    for option in options:
        parse(option)
    images = 2 * args.batch  # two views per sample
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"device: {args.device} ({name}), torch {torch.__version__}, batch {args.batch} x 2 "
          f"views, {args.steps} steps; warm-up = start to step 10")
    base_cell = make_cell(args, "fp32")
    _, plain = min((hand_loop(base_cell, args.device, "fp32") for _ in range(2)),
                   key=lambda r: r[1])  # the less disturbed of two
    print(f"{'plain torch loop, fp32 eager':<24} {images / plain:9.1f} img/s  (the baseline)")
    print(f"{'option':<24} {'engine img/s':>12} {'hand img/s':>11} {'engine/hand':>11} "
          f"{'x plain':>8} {'warm-up s':>10}")
    rows: dict[str, dict[str, float]] = {}
    out = RESULTS / f"train_throughput_{args.device}.json"
    RESULTS.mkdir(exist_ok=True)
    for option in options:
        cell = make_cell(args, option)
        hand_warm, hand = hand_loop(cell, args.device, option)
        warm, per_step = engine_loop(cell, args.device)
        rows[option] = {"engine_img_s": images / per_step, "hand_img_s": images / hand,
                        "engine_over_hand": hand / per_step, "over_plain": plain / per_step,
                        "engine_warmup_s": warm, "hand_warmup_s": hand_warm}
        print(f"{option:<24} {images / per_step:12.1f} {images / hand:11.1f} "
              f"{hand / per_step:11.3f} {plain / per_step:8.3f} {warm:10.1f}", flush=True)
        out.write_text(json.dumps({"device": args.device, "name": name, "batch": args.batch,
                                   "torch": torch.__version__, "plain_img_s": images / plain,
                                   "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
