"""Executors: wall time of one CPU grid (8 cells) on ``local`` vs ``pool`` vs ``ray`` with 2
workers, each into a fresh store; prints the speed-up of each over ``local``.

    python benchmarks/executors.py [--steps 150] [--no-ray]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from geobench.runner import run_suite

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
    start = time.perf_counter()
    summary = run_suite(str(suite), store_path=str(store), executor=executor, options=options,
                        quiet=True)
    assert summary.statuses["complete"] == len(summary.cells) == 8
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.yaml"
        suite.write_text(SUITE.format(steps=args.steps))
        local = timed(suite, Path(tmp) / "local.sqlite", "local")
        print(f"local (serial): {local:6.1f} s")
        pool = timed(suite, Path(tmp) / "pool.sqlite", "pool", workers=2)
        print(f"pool, 2 workers: {pool:6.1f} s   speed-up {local / pool:.2f}x")
        if not args.no_ray:
            import ray

            ray_s = timed(suite, Path(tmp) / "ray.sqlite", "ray", local_cpus=2)
            ray.shutdown()
            print(f"ray, 2 CPUs:     {ray_s:6.1f} s   speed-up {local / ray_s:.2f}x "
                  "(includes starting the local cluster)")


if __name__ == "__main__":
    main()
