"""``geobench analyze`` on a checkpoint trained and saved here."""

import copy
import json
import math

import pytest
import torch
from geobench_projection.metrics.orbit import OrbitCompression, OrbitParams

from geobench.cli import main as geobench
from geobench.contract.interfaces import Arm, BuildContext, MetricContext
from geobench.contract.manager import load_registry
from geobench.train.loader import batches

DATA = {"name": "orbit_manifold", "n_train": 96, "n_test": 48, "reference_size": 16,
        "batch_size": 16, "dim": 12}
AUG = {"name": "orbit_action"}
BACKBONE = {"name": "mlp", "depth": 2, "width": 16, "out_dim": 8}
HEAD = {"name": "mlp", "depth": 2, "hidden": 16, "out": 6, "activation": "gelu"}
OBJECTIVE = {"name": "vicreg"}


def analyze(argv: list[str]) -> int:
    """``geobench analyze ARGV``."""
    return geobench(["analyze", *argv])


def _arm(reg, data):
    ctx = BuildContext(0, torch.device("cpu"), data)
    backbone = reg.build("backbones", BACKBONE, ctx)
    ctx.feature_dim = backbone.feature_dim
    head = reg.build("heads", HEAD, ctx)
    ctx.embed_dim = head.out_dim
    arm = Arm(backbone, head, reg.build("objectives", OBJECTIVE, ctx))
    arm.objective.setup(arm)
    return arm


def _orbit_values(arm, data, augment, seed=0, samples=24, views=4):
    """What analyze computes: views of the first batch drawn first, then the orbits."""
    batch = next(iter(batches(data, seed, 1)))
    gen = torch.Generator().manual_seed(seed)
    v = [augment(batch.x, batch.index, gen, view=i) for i in range(2)]
    ctx = MetricContext(0, 0, "a", arm.eval(), data, batch, v, augment, gen, {})
    return OrbitCompression(OrbitParams(samples=samples, views=views))(ctx)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    reg = load_registry()
    torch.manual_seed(0)
    data = reg.build("datasets", DATA, BuildContext(0, torch.device("cpu")))
    augment = reg.build("augmentations", AUG, BuildContext(0, torch.device("cpu"), data))
    arm = _arm(reg, data)
    initial = copy.deepcopy(arm)
    opt = torch.optim.SGD([p for p in arm.parameters() if p.requires_grad], lr=0.005)
    gen = torch.Generator().manual_seed(1)
    for batch in batches(data, 1, 15):
        views = [augment(batch.x, batch.index, gen, view=v) for v in range(2)]
        opt.zero_grad()
        arm.objective(arm, batch, views).backward()
        opt.step()
    assert all(torch.isfinite(p).all() for p in arm.parameters())
    path = tmp_path_factory.mktemp("ckpt") / "arm.pt"
    torch.save(arm.state_dict(), path)
    return path, arm, data, augment, initial


def _args(path, *extra):
    spec = json.dumps
    return ["--data", spec(DATA), "--augment", spec(AUG), "--backbone", spec(BACKBONE),
            "--head", spec(HEAD), "--checkpoint", str(path), "--samples", "24", "--views", "4",
            "--json", *extra]


def test_analyze_reports_the_trained_checkpoint(trained, capsys):
    path, arm, data, augment, initial = trained
    assert analyze(_args(path, "--objective", "{name: vicreg}")) == 0
    out = json.loads(capsys.readouterr().out)
    expected = _orbit_values(arm, data, augment)
    for key, value in expected.items():
        assert math.isclose(out[f"orbit_compression.{key}"], value, rel_tol=1e-5), key
    untrained = _orbit_values(initial, data, augment)
    assert not math.isclose(untrained["normalised_ratio"], expected["normalised_ratio"],
                            rel_tol=1e-4)
    assert out["metric_singularity.exact"] == 1.0
    assert math.isfinite(out["metric_singularity.ratio"])


def test_analyze_errors_are_one_line(tmp_path, trained, capsys):
    assert analyze(_args(tmp_path / "missing.pt")) == 2
    err = capsys.readouterr().err
    assert err.startswith("geobench analyze: ") and err.count("\n") == 1
    path = trained[0]
    bad = dict(BACKBONE, width=32)
    args = _args(path)
    args[args.index("--backbone") + 1] = json.dumps(bad)
    assert analyze(args) == 2


def test_analyze_without_objective_reports_orbits_only(trained, capsys):
    assert analyze(_args(trained[0])) == 0
    out = json.loads(capsys.readouterr().out)
    assert out and all(key.startswith("orbit_compression.") for key in out)
