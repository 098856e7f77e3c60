"""Executors: wall time of one CPU grid (8 cells of >= 10 s each on 2 cores) on ``local`` vs
``pool`` (and ``ray``) with 2 workers, each into a fresh store; prints the speed-up over
``local``. ``local`` runs each cell on all the machine's cores (``--threads``), the pool each
cell on cores / workers threads, so that the workers do not fight over the cores.

    python benchmarks/executors.py [--steps 2000] [--no-ray] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from geobench.run.runner import RunOptions, run_suite

CELLS = 8
WORKERS = 2
WORKLOADS = {  # name -> (what it is, the suite's base, default steps for >= 10 s a cell)
    "smoke": ("small models like the shipped smoke suites: MLP 32->64x2, batch 64, an NCCC "
              "probe every 100 steps",
              """\
  data: {{name: gaussian_mixture, num_classes: 10, dim: 32, n_train: 1024, n_test: 256,
         batch_size: 64, reference_size: 128}}
  backbone: {{name: mlp, depth: 2, width: 64}}
  objective: {{name: ce}}
  optimizer: {{name: sgd, lr: 0.05}}
  train: {{steps: {steps}, device: cpu}}
  metrics:
    - {{name: nccc, every: 100}}
""", 12000),
    "wide": ("a compute-bound MLP 64->256x3, batch 128, that two threads speed up",
             """\
  data: {{name: gaussian_mixture, num_classes: 10, dim: 64, n_train: 2048, n_test: 256,
         batch_size: 128}}
  backbone: {{name: mlp, depth: 3, width: 256}}
  objective: {{name: ce}}
  optimizer: {{name: sgd, lr: 0.05}}
  train: {{steps: {steps}, device: cpu}}
""", 5000),
}
SUITE = """\
name: executor_bench
base:
{base}grid:
  optimizer.lr: [0.01, 0.02, 0.05, 0.1]
seeds: 2
"""


def timed(suite: Path, store: Path, executor: str, threads: int, **options) -> float:
    """Seconds to run every cell of ``suite`` on ``executor``, ``threads`` torch threads a
    cell, into the fresh ``store``."""
    start = time.perf_counter()
    summary = run_suite(str(suite), RunOptions(store=str(store), executor=executor,
                                               executor_options=options, threads=threads,
                                               quiet=True))
    assert summary.statuses["complete"] == len(summary.cells) == CELLS
    return time.perf_counter() - start


def compare(tmp: Path, name: str, steps: int, with_ray: bool, say) -> dict[str, float]:
    """Wall times of one workload on local, pool (and ray), and the pool's speed-up."""
    what, base, _ = WORKLOADS[name]
    cores = os.cpu_count() or 1
    threads = max(1, cores // WORKERS)
    suite = tmp / f"{name}.yaml"
    suite.write_text(SUITE.format(base=base.format(steps=steps)))
    say(f"{name}: {what}; {CELLS} cells of {steps} steps")
    out = {"local_s": timed(suite, tmp / f"{name}-local.sqlite", "local", cores)}
    say(f"  local (serial, {cores} threads): {out['local_s']:6.1f} s "
        f"({out['local_s'] / CELLS:.1f} s per cell)")
    out["pool_s"] = timed(suite, tmp / f"{name}-pool.sqlite", "pool", threads,
                          workers=WORKERS)
    out["speedup"] = out["local_s"] / out["pool_s"]
    say(f"  pool ({WORKERS} workers x {threads} thread): {out['pool_s']:6.1f} s   "
        f"speed-up {out['speedup']:.2f}x")
    if with_ray:
        import ray

        out["ray_s"] = timed(suite, tmp / f"{name}-ray.sqlite", "ray", threads,
                           local_cpus=WORKERS)
        ray.shutdown()
        say(f"  ray ({WORKERS} CPUs): {out['ray_s']:6.1f} s   speed-up "
            f"{out['local_s'] / out['ray_s']:.2f}x (includes starting the local cluster)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=[*WORKLOADS, "both"], default="both")
    ap.add_argument("--steps", type=int, help="training steps of each cell (default: the "
                                              "workload's, >= 10 s a cell on 2 cores)")
    ap.add_argument("--no-ray", action="store_true", help="skip the ray executor")
    ap.add_argument("--json", action="store_true", help='print only {"<workload>": '
                    '{"local_s": .., "pool_s": .., "speedup": ..}, ...}')
    args = ap.parse_args()
    names = list(WORKLOADS) if args.workload == "both" else [args.workload]
    say = (lambda line: None) if args.json else print
    say(f"{os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: compare(Path(tmp), name, args.steps or WORKLOADS[name][2],
                                 not args.no_ray, say) for name in names}
    if args.json:
        print(json.dumps({name: {k: round(v, 2) for k, v in out.items()}
                          for name, out in results.items()}))


if __name__ == "__main__":
    main()
