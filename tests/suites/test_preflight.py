"""Every shipped profile builds and runs: each distinct design point of every profile (one
trial seed) for 2 steps on the CPU, on random files written in the real formats (CIFAR
pickles, Fashion-MNIST / MNIST IDX, Tiny-ImageNet's layout), with every metric evaluated at
least once. Batches (4 samples), splits and the metrics' sample counts and iteration caps are
cut down so that the full profiles' ResNet/ViT/VGG points fit the slow run; the models, data
formats, schedules' shapes and metric code paths are the profiles' own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from geobench_data.fakes import write_cifar, write_mnist, write_tiny_imagenet

from geobench.contract.manager import registry
from geobench.records import Status
from geobench.run.preflight import Shortening, design_points, shortened
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell

SUITES = sorted((Path(__file__).resolve().parents[2] / "suites").glob("*.yaml"))
# batch 4: at 2 samples a batch VICReg on a ResNet drives its BN statistics non-finite in 2
# steps (the preflight cut, not the profile: it trains at 256)
CUT = Shortening(steps=2, batch=4, samples=16, device="cpu", data={"verify_md5": False},
                 metrics={"every": None, "samples": 8, "max_iter": 8, "slq_steps": 8, "probes": 1,
                          "max_train": 16, "max_samples": 16})


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    write_cifar(root, n_train=1600, n_test=1600)  # 16 images of each CIFAR-100 class
    for name in ("fashion-mnist", "mnist"):
        write_mnist(root / name, n_train=1000, n_test=1000)
    write_tiny_imagenet(root / "data" / "tiny-imagenet-200", per_class=2, val_per_class=1)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES, ids=[p.stem for p in SUITES])
def test_every_design_point_of_every_profile_runs(suite, data_root, monkeypatch):
    """A point that two profiles share once shortened (orbit's full and paper profiles differ
    only in length) runs once."""
    monkeypatch.setenv("GEOBENCH_DATA", str(data_root))
    monkeypatch.chdir(data_root)  # a profile's relative root: data/tiny-imagenet-200
    loaded, reg, seen = load_suite(suite), registry(), set()
    for profile in dict.fromkeys(["smoke", *loaded.suite.profiles]):
        for point in design_points(Study(loaded, reg, profile).cells):
            cell = shortened(point, reg, CUT)
            arms = json.dumps(cell.arms, sort_keys=True)
            if arms in seen:
                continue
            seen.add(arms)
            result = run_cell(cell, reg)
            assert result.status == Status.COMPLETE, (profile, point.label(), result.error)
            declared = {m["id"] for record in cell.arms.values() for m in record["metrics"]}
            assert declared <= set(result.timing.calls), (profile, point.label())
