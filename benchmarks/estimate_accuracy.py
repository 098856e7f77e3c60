"""A cost estimate against a measured CPU run: calibrate on a 40-step run of head_depth's
first design point (four heads on a tiny ResNet, the Hessian every 20 steps, guillotine
probes), price two of its cells at their full 400 steps, run those cells and print the
estimate, the measured wall time and their ratio (about a minute on an idle machine; a
ratio within 1/1.5–1.5 is what `geobench show` promises). A benchmark rather than a test:
wall time under a shared machine's load is no test of the arithmetic.

    OMP_NUM_THREADS=1 python benchmarks/estimate_accuracy.py
"""

from __future__ import annotations

from geobench.contract.manager import registry
from geobench.run import estimate
from geobench.run.calibrate import calibrate
from geobench.run.preflight import Shortening, design_points
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell


def main() -> None:
    reg = registry()
    cells = Study(load_suite("suites/head_depth.yaml"), reg, "smoke").cells
    point = design_points(cells)[0]
    cal = estimate.Calibration(estimate.CALIBRATION,
                               **calibrate([point], reg, Shortening(steps=40)))
    runs = [c for c in cells if c.arms == point.arms][:2]
    measured = 0.0
    for cell in runs:
        result = run_cell(cell, reg)
        assert result.status.value == "complete", result.error
        measured += result.finished - result.started
    priced = estimate.estimate(runs, cal)
    print(f"estimate {priced.seconds:.1f} s, measured {measured:.1f} s: "
          f"ratio {priced.seconds / measured:.2f}")


if __name__ == "__main__":
    main()
