"""``geobench projection-figures``: series grouped by facet and arm, from a real store."""

from geobench_projection.figures import collect, plot

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import Cell, CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite

SUITE = """\
name: proj_tiny
base:
  data: {name: gaussian_mixture, num_classes: 3, dim: 8, n_train: 96, n_test: 48,
         batch_size: 32, reference_size: 32}
  augment: {name: gaussian_noise, sigma: 0.1}
  backbone: {name: mlp, depth: 2, width: 16}
  head: {name: identity}
  objective: {name: ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 5, device: cpu}
arms:
  relu: {backbone: {activation: relu}}
  gelu: {backbone: {activation: gelu}}
grid:
  optimizer.lr: [0.05, 0.1]
seeds: 2
"""


def _cell(i, norm, seed):
    arms = {a: {"head": {"name": "mlp", "norm": norm}} for a in ("relu", "gelu")}
    return Cell(f"{i:016x}", "s", "smoke", seed, arms, {"head.norm": norm, "trial_seed": seed})


def test_collect_groups_by_facet_and_arm_and_plot_writes(tmp_path):
    cells = [_cell(i, norm, seed) for i, (norm, seed) in
             enumerate([("none", 0), ("none", 1), ("batch", 0)])]
    series = [(cell.id, arm, "m.x", step, float(k + step + (10 if arm == "gelu" else 0)))
              for k, cell in enumerate(cells) for arm in ("relu", "gelu") for step in (0, 5)]
    series.append((cells[0].id, "relu", "m.y", 0, 99.0))  # another series: left out
    curves = collect(cells, series, "m.x", ["head.norm"], "arm")
    assert set(curves) == {("none",), ("batch",)}
    assert curves[("none",)]["relu"] == {0: [0.0, 1.0], 5: [5.0, 6.0]}
    assert curves[("batch",)]["gelu"] == {0: [12.0], 5: [17.0]}
    out = tmp_path / "f.png"
    plot(curves, "m.x", ["head.norm"], out, "symlog", 1e-3, "s")
    assert out.stat().st_size > 0


def _store(tmp_path):
    """proj_tiny's four cells stored with a series ``m.x`` = 10 lr + seed + step (+100 for
    gelu) at steps 0 and 5, but cell (lr 0.1, seed 1) stored as failed with no series."""
    suite = tmp_path / "proj_tiny.yaml"
    suite.write_text(SUITE)
    db = tmp_path / "db.sqlite"
    store = Store(db)
    for cell in Study(load_suite(suite), registry(), "smoke").cells:
        lr, seed = cell.varied["optimizer.lr"], cell.trial_seed
        if (lr, seed) == (0.1, 1):
            store.write(cell, CellResult(cell.id, "failed", error="boom"), {})
            continue
        series = [(arm, "m.x", step, 10 * lr + seed + step + (100 if arm == "gelu" else 0))
                  for arm in ("relu", "gelu") for step in (0, 5)]
        store.write(cell, CellResult(cell.id, "complete", series=series), {})
    store.close()
    return suite, db


def test_the_command_draws_the_stored_series(tmp_path, monkeypatch, capsys):
    suite, db = _store(tmp_path)
    out = tmp_path / "figs" / "m_x.png"
    args = ["projection-figures", str(suite), "--store", str(db), "--key", "m.x",
            "--facet", "optimizer.lr", "--yscale", "symlog", "--out", str(out)]
    assert main(args) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert out.stat().st_size > 0

    drawn = {}
    monkeypatch.setattr("geobench_projection.figures.plot",
                        lambda curves, *rest: drawn.update(curves))
    assert main(args) == 0
    seeds_sorted = {facet: {arm: {step: sorted(values) for step, values in steps.items()}
                            for arm, steps in arms.items()} for facet, arms in drawn.items()}
    assert seeds_sorted == {
        (0.05,): {"relu": {0: [0.5, 1.5], 5: [5.5, 6.5]},
                  "gelu": {0: [100.5, 101.5], 5: [105.5, 106.5]}},
        (0.1,): {"relu": {0: [1.0], 5: [6.0]}, "gelu": {0: [101.0], 5: [106.0]}},
    }


def test_a_series_not_stored_is_exit_1(tmp_path, capsys):
    suite, db = _store(tmp_path)
    out = tmp_path / "f.png"
    assert main(["projection-figures", str(suite), "--store", str(db), "--key", "m.nope",
                 "--out", str(out)]) == 1
    assert capsys.readouterr().err == f"no stored series 'm.nope' for {suite} in {db}\n"
    assert not out.exists()
