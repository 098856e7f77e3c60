"""Engine overhead: training throughput of ``engine.run_cell`` vs a hand-written torch loop.

Both train the same model (an MLP on a Gaussian mixture, cross-entropy through a linear
classifier, SGD) on the same batches for the same number of steps, in this process,
alternating repeats so that machine noise hits both alike. Prints steps/s of each and the
ratio engine / hand loop (1.0 = no overhead).

    python benchmarks/engine_overhead.py [--steps 300] [--repeats 5] [--width 512]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from geobench.contract.interfaces import Arm, BuildContext
from geobench.contract.manager import registry
from geobench.study import Study
from geobench.train.engine import run_cell
from geobench.train.loader import batches

SUITE = """\
name: engine_overhead
base:
  data: {{name: gaussian_mixture, num_classes: 10, dim: 128, n_train: 8192, n_test: 256,
         batch_size: 256}}
  backbone: {{name: mlp, depth: 3, width: {width}}}
  head: {{name: identity}}
  objective: {{name: ce}}
  optimizer: {{name: sgd, lr: 0.05, momentum: 0.9}}
  train: {{steps: {steps}, device: cpu}}
"""


def hand_loop(cell) -> float:
    """The same training written by hand: seconds per step."""
    reg, spec, seed = registry(), cell.arms["main"], cell.trial_seed
    torch.manual_seed(seed)
    data = reg.build("datasets", spec["data"], BuildContext(seed, torch.device("cpu")))
    torch.manual_seed(seed)
    ctx = BuildContext(seed, torch.device("cpu"), data)
    backbone = reg.build("backbones", spec["backbone"], ctx)
    ctx.feature_dim = ctx.embed_dim = backbone.feature_dim
    head = reg.build("heads", spec["head"], ctx)
    objective = reg.build("objectives", spec["objective"], ctx)
    arm = Arm(backbone, head, objective)
    opt = torch.optim.SGD(arm.parameters(), lr=0.05, momentum=0.9)
    start = time.perf_counter()
    for batch in batches(data, seed, spec["train"]["steps"]):
        opt.zero_grad(set_to_none=True)
        logits = objective.classifier(head(backbone(batch.x)))
        torch.nn.functional.cross_entropy(logits, batch.y).backward()
        opt.step()
    return (time.perf_counter() - start) / spec["train"]["steps"]


def engine(cell) -> float:
    """Seconds per step of the engine's loop, timed between its progress reports (so the
    set-up the hand loop does before its clock starts is excluded here too)."""
    stamps: list[tuple[int, float]] = []
    result = run_cell(cell, progress=lambda step, total, loss: stamps.append(
        (step, time.perf_counter())))
    assert result.status == "complete", result.traceback
    (s0, t0), (s1, t1) = stamps[0], stamps[-1]
    return (t1 - t0) / (s1 - s0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--width", type=int, default=512)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "suite.yaml"
        path.write_text(SUITE.format(steps=args.steps, width=args.width))
        cell = Study.open(path).cells[0]
    hand, eng = [], []
    hand_loop(cell)  # warm-up
    for _ in range(args.repeats):
        hand.append(hand_loop(cell))
        eng.append(engine(cell))
    h, e = min(hand), min(eng)  # the least-disturbed repeat of each
    print(f"hand-written loop: {1 / h:8.1f} steps/s  (best of {args.repeats})")
    print(f"geobench engine:   {1 / e:8.1f} steps/s")
    print(f"ratio engine / hand loop: {h / e:.3f}  (target >= 0.97)")


if __name__ == "__main__":
    main()
