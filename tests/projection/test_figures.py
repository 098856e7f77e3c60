from geobench_projection.figures import collect, plot

from geobench.records import Cell
from geobench.run.store import Store
from geobench.train.engine import CellResult


def _cell(i, norm, seed):
    arms = {a: {"head": {"name": "mlp", "norm": norm}} for a in ("relu", "gelu")}
    return Cell(f"{i:016x}", "s", "smoke", seed, arms, {"head.norm": norm, "trial_seed": seed})


def test_collect_groups_by_facet_and_arm_and_plot_writes(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    cells = [_cell(i, norm, seed) for i, (norm, seed) in
             enumerate([("none", 0), ("none", 1), ("batch", 0)])]
    for k, cell in enumerate(cells):
        series = [(arm, "m.x", step, float(k + step + (10 if arm == "gelu" else 0)))
                  for arm in ("relu", "gelu") for step in (0, 5)]
        store.write(cell, CellResult(cell.id, "complete", series=series), {})
    curves = collect(cells, store, "m.x", ["head.norm"], "arm")
    store.close()
    assert set(curves) == {("none",), ("batch",)}
    assert curves[("none",)]["relu"] == {0: [0.0, 1.0], 5: [5.0, 6.0]}
    assert curves[("batch",)]["gelu"] == {0: [12.0], 5: [17.0]}
    out = tmp_path / "f.png"
    plot(curves, "m.x", ["head.norm"], out, "symlog", 1e-3, "s")
    assert out.stat().st_size > 0
