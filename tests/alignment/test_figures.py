"""Design-point selection of the alignment figures, and ``geobench alignment-figures`` on a
real store."""

from geobench_alignment.figures import (
    METRIC,
    at_reference,
    batch_points,
    curve_points,
    reference_point,
    sweep_points,
)

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import Cell, CellResult, finals_of
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite


def _cell(cid, classes=20, tau=0.5, batch=64, scaling="none", dataset="gm", seed=0):
    spec = {"data": {"name": dataset, "classes": classes, "batch_size": batch},
            "objective": {"tau": tau}, "train": {"lr_scaling": scaling, "base_batch_size": 64}}
    arms = {"cl": spec, "nscl": spec, "ce": spec}
    return Cell(cid, "s", "smoke", seed, arms, {})


CELLS = [
    _cell("ref0"), _cell("ref1", seed=1), _cell("c2", classes=2), _cell("c100", classes=100),
    _cell("t1", tau=1.0), _cell("b16l", batch=16, scaling="linear"),
    _cell("b256l", batch=256, scaling="linear"), _cell("b16n", batch=16),
    _cell("dig", dataset="digits", classes=10),
]
FINALS = {c.id: {"cl~nscl/cka.debiased": i / 10, "cl~ce/cka.debiased": -i / 10,
                 "cl~nscl/cka.biased": 9.0} for i, c in enumerate(CELLS)}


def test_reference_point_is_the_most_common_value():
    ref = reference_point(CELLS)
    assert ref == {"dataset": "'gm'", "classes": "20", "tau": "0.5", "batch": "64",
                   "scaling": "'none'"}
    assert at_reference(CELLS[0], ref) and not at_reference(CELLS[2], ref)
    assert at_reference(CELLS[2], ref, ("classes",))


def test_sweeps_hold_the_other_factors_at_reference():
    ref = reference_point(CELLS)
    classes = sweep_points(CELLS, FINALS, ref, "classes")
    assert {k: dict(v) for k, v in classes.items()} == {
        "nscl": {20: [0.0, 0.1], 2: [0.2], 100: [0.3]},
        "ce": {20: [-0.0, -0.1], 2: [-0.2], 100: [-0.3]},
    }
    tau = sweep_points(CELLS, FINALS, ref, "tau")
    assert dict(tau["nscl"]) == {0.5: [0.0, 0.1], 1.0: [0.4]}


def test_batch_lines_share_the_base_batch_point():
    ref = reference_point(CELLS)
    lines = batch_points(CELLS, FINALS, ref, "nscl")
    assert dict(lines["lr linear"]) == {16: [0.5], 256: [0.6], 64: [0.0, 0.1]}
    assert dict(lines["lr none"]) == {16: [0.7], 64: [0.0, 0.1]}


def test_training_curves_at_reference_only():
    ref = reference_point(CELLS)
    cka = "cka.debiased"
    series = [("ref0", "cl~nscl", cka, 0, 1.0), ("ref1", "cl~nscl", cka, 0, 0.8),
              ("c2", "cl~nscl", cka, 0, 0.1), ("ref0", "cl~ce", cka, 5, 0.5),
              ("ref0", "cl~nscl", "cka.biased", 0, 0.6), ("ref0", "cl~nscl", "rsa.value", 0, 0.3)]
    lines = curve_points(CELLS, series, ref)
    assert dict(lines["nscl"]) == {0: [1.0, 0.8]}
    assert dict(lines["ce"]) == {5: [0.5]}


SUITE = """\
name: align_tiny
base:
  data: {name: gaussian_mixture, num_classes: 10, dim: 8, n_train: 96, n_test: 48,
         reference_size: 32, classes: 4, batch_size: 32}
  augment: {name: gaussian_noise, sigma: 0.5}
  backbone: {name: mlp, depth: 2, width: 16}
  head: {name: identity}
  objective: {name: cl}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 10, lr_scaling: none, base_batch_size: 32, device: cpu}
  metrics:
    - {name: cka, every: 5}
arms:
  cl: {objective: {name: cl}}
  nscl: {objective: {name: nscl}}
zip:
  - tags.design: [reference, "C'=2", "tau=1"]
    data: [{}, {classes: 2}, {}]
    arms.cl.objective.tau: [0.5, 0.5, 1.0]
    arms.nscl.objective.tau: [0.5, 0.5, 1.0]
seeds: 3
"""


def _value(classes, tau, seed):
    return classes / 10 + tau + seed / 100


def _store(tmp_path):
    """align_tiny's nine cells stored with final and series CKA(cl, nscl) = C'/10 + tau +
    seed/100, but the reference point's seed 2 stored as failed (its values, 7.0, must not
    count)."""
    suite = tmp_path / "align_tiny.yaml"
    suite.write_text(SUITE)
    db = tmp_path / "res" / "db.sqlite"
    store = Store(db)
    for cell in Study(load_suite(suite), registry(), "smoke").cells:
        spec = cell.arms["cl"]
        classes, tau = spec["data"]["classes"], spec["objective"]["tau"]
        if (classes, tau, cell.trial_seed) == (4, 0.5, 2):
            series = [("cl~nscl", METRIC, 0, 7.0)]
            store.write(cell, CellResult(cell.id, "failed", error="boom", series=series,
                                         finals=finals_of(series)), {})
            continue
        value = _value(classes, tau, cell.trial_seed)
        series = [("cl~nscl", METRIC, 0, value - 1), ("cl~nscl", METRIC, 5, value),
                  ("cl~nscl", "cka.biased", 5, 9.0)]
        store.write(cell, CellResult(cell.id, "complete", series=series,
                                     finals=finals_of(series)), {})
    store.close()
    return suite, db


def test_the_command_writes_four_figures_beside_the_leaderboard(tmp_path, capsys):
    suite, db = _store(tmp_path)
    assert main(["alignment-figures", str(suite), "--store", str(db)]) == 0
    folder = tmp_path / "res" / "leaderboards"  # where `geobench leaderboard` writes
    names = ["cka_training", "cka_vs_classes", "cka_vs_tau", "cka_vs_batch"]
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {folder / f'align_tiny_{n}.png'}" for n in names]
    assert all((folder / f"align_tiny_{n}.png").stat().st_size > 0 for n in names)
    out = tmp_path / "elsewhere"
    assert main(["alignment-figures", str(suite), "--store", str(db), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"align_tiny_{n}.png" for n in names)


def test_the_command_reads_complete_cells_only(tmp_path, monkeypatch, capsys):
    suite, db = _store(tmp_path)
    drawn = {}
    monkeypatch.setattr("geobench_alignment.figures._draw",
                        lambda ax, lines, xlabel, *rest: drawn.update({xlabel: lines}))
    assert main(["alignment-figures", str(suite), "--store", str(db)]) == 0

    def values(lines):
        return {arm: {x: sorted(v) for x, v in points.items()} for arm, points in lines.items()}

    reference = [_value(4, 0.5, 0), _value(4, 0.5, 1)]  # seed 2 failed
    assert values(drawn["classes C'"]) == {"nscl": {
        4: reference, 2: [_value(2, 0.5, seed) for seed in range(3)]}}
    assert values(drawn["temperature tau"]) == {"nscl": {
        0.5: reference, 1.0: [_value(4, 1.0, seed) for seed in range(3)]}}
    assert values(drawn["step"]) == {"nscl": {0: [v - 1 for v in reference], 5: reference}}
    assert values(drawn["batch size B"]) == {"lr none": {32: reference}}


def test_no_complete_cell_is_exit_1(tmp_path, capsys):
    suite = tmp_path / "align_tiny.yaml"
    suite.write_text(SUITE)
    db = tmp_path / "db.sqlite"
    Store(db).close()
    assert main(["alignment-figures", str(suite), "--store", str(db)]) == 1
    assert capsys.readouterr().err == f"no complete cells of {suite} [smoke] in {db}\n"
    assert not (tmp_path / "leaderboards").exists()
