"""Executors: wall time of one CPU grid (8 cells of >= 10 s each on 2 cores) on ``local`` vs
``pool`` (and ``ray``) with 2 workers, each into a fresh store; prints the speed-up over
``local``. ``local`` runs with this machine's default torch threads, each pool worker with
cores / workers threads, so that the workers do not fight over the cores.

    python benchmarks/executors.py [--steps 2000] [--no-ray] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from geobench.runner import run_suite

CELLS = 8
WORKERS = 2
SUITE = """\
name: executor_bench
base:
  data: {{name: gaussian_mixture, num_classes: 10, dim: 64, n_train: 2048, n_test: 256,
         batch_size: 128}}
  backbone: {{name: mlp, depth: 3, width: 256}}
  objective: {{name: ce}}
  optimizer: {{name: sgd, lr: 0.05}}
  train: {{steps: {steps}, device: cpu}}
grid:
  optimizer.lr: [0.01, 0.02, 0.05, 0.1]
seeds: 2
"""


def timed(suite: Path, store: Path, executor: str, **options) -> float:
    """Seconds to run every cell of ``suite`` on ``executor`` into the fresh ``store``."""
    start = time.perf_counter()
    summary = run_suite(str(suite), store_path=str(store), executor=executor, options=options,
                        quiet=True)
    assert summary.statuses["complete"] == len(summary.cells) == CELLS
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="training steps of each cell")
    ap.add_argument("--no-ray", action="store_true", help="skip the ray executor")
    ap.add_argument("--json", action="store_true",
                    help='print only {"local_s": .., "pool_s": .., "speedup": ..} (and ray_s)')
    args = ap.parse_args()
    threads = max(1, (os.cpu_count() or 1) // WORKERS)
    out: dict[str, float] = {}
    say = (lambda line: None) if args.json else print
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.yaml"
        suite.write_text(SUITE.format(steps=args.steps))
        say(f"{CELLS} cells of {args.steps} steps; {os.cpu_count()} cores")
        out["local_s"] = timed(suite, Path(tmp) / "local.sqlite", "local")
        say(f"local (serial, {torch.get_num_threads()} threads): {out['local_s']:6.1f} s "
            f"({out['local_s'] / CELLS:.1f} s per cell)")
        out["pool_s"] = timed(suite, Path(tmp) / "pool.sqlite", "pool", workers=WORKERS,
                              threads_per_worker=threads)
        out["speedup"] = out["local_s"] / out["pool_s"]
        say(f"pool ({WORKERS} workers x {threads} thread): {out['pool_s']:6.1f} s   "
            f"speed-up {out['speedup']:.2f}x")
        if not args.no_ray:
            import ray

            out["ray_s"] = timed(suite, Path(tmp) / "ray.sqlite", "ray", local_cpus=WORKERS)
            ray.shutdown()
            say(f"ray ({WORKERS} CPUs): {out['ray_s']:6.1f} s   speed-up "
                f"{out['local_s'] / out['ray_s']:.2f}x (includes starting the local cluster)")
    if args.json:
        print(json.dumps({key: round(value, 2) for key, value in out.items()}))


if __name__ == "__main__":
    main()
