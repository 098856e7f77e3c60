"""Cost estimates of shipped suites: the missing-calibration message, an estimate of every
full profile from the calibration files the repository tracks (an estimate against a
measured run is benchmarks/estimate_accuracy.py)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from geobench.contract.manager import registry
from geobench.run import estimate
from geobench.study import Study
from geobench.suite import load_suite


def test_without_calibration_show_names_the_file(tmp_path):
    cells = Study(load_suite("suites/collapse.yaml"), registry(), "smoke").seed_cells("all")
    lines = estimate.cost_lines(cells, ("cpu",), tmp_path)
    # 10 design points x (5 exploration + 12 confirmation seeds), 4,450 steps a seed; the
    # 12 replication seeds run only when asked for
    assert lines[0] == "steps: 75,650 lockstep (4 arms each step), 302,600 arm steps"
    assert lines[1].startswith(f"CPU-hours: not estimated — no calibration file "
                               f"{tmp_path / 'calibration_cpu.json'}")


ROOT = Path(__file__).resolve().parents[2]
SUITES = sorted(p.stem for p in (ROOT / "suites").glob("*.yaml"))
CPU_FULL = {"mirror_flow", "max_margin", "mirror_delay"}  # full profiles with train.device: cpu


@pytest.fixture(scope="module")
def tracked(tmp_path_factory) -> Path:
    """A folder with only the calibration files git tracks (an ignored file cannot count)."""
    files = subprocess.run(["git", "ls-files", "benchmarks/calibration"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    folder = tmp_path_factory.mktemp("calibration")
    for name in files:
        shutil.copy(ROOT / name, folder)
    assert {"calibration_cpu.json", "calibration_cuda.json"} <= {p.name for p in
                                                                 folder.iterdir()}
    return folder


@pytest.mark.parametrize("suite", SUITES)
def test_every_full_profile_is_priced_from_the_tracked_calibration(suite, tracked):
    """GPU-hours for a GPU profile (its metrics and start-up uncalibrated on the GPU: "at
    least"), CPU-hours in full for a CPU one, and the other device's line says why not."""
    cells = Study(load_suite(ROOT / "suites" / f"{suite}.yaml"), registry(), "full").cells
    gpu, cpu, memory = estimate.cost_lines(cells, folder=tracked)[1:]
    assert memory.startswith("memory: "), memory
    if suite in CPU_FULL:
        assert re.match(r"CPU-hours: about \d+\.\d\d on .+ \(calibration_cpu\.json\)$", cpu), cpu
        assert gpu == "GPU-hours: — (every cell sets train.device: cpu)"
    else:
        assert re.match(r"GPU-hours: (about|at least) \d+\.\d\d on NVIDIA H200", gpu), gpu
        assert "step of" not in gpu, gpu  # every training step priced
        assert cpu.startswith("CPU-hours: "), cpu
