"""Leaderboard aggregation against hand-computed statistics of known stored values."""

import math
import statistics

from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.report.leaderboard import render
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite


def _table(md: str) -> list[list[str]]:
    lines = [ln for ln in md.split("| column")[0].splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]


def _setup(tmp_path, text: str):
    """The suite ``text`` loaded and expanded, its cells by (lr, trial seed), an empty store."""
    (tmp_path / "s.yaml").write_text(text)
    loaded = load_suite(tmp_path / "s.yaml")
    cells = Study(loaded, registry()).cells
    by = {(c.varied["optimizer.lr"], c.trial_seed): c for c in cells}
    return loaded, cells, by, Store(tmp_path / "db.sqlite")


def test_aggregation_missing_diverged_and_best(tmp_path):
    plots = "[loss.train, {key: nccc.accuracy, logy: true, where: {optimizer.lr: 0.1}}]"
    text = small_suite(lrs=(0.1, 0.2, 0.3)).replace("  plots: [loss.train]",
                                                     f"  plots: {plots}")
    text = text.replace("- {key: loss.train, label: final loss}",
                        "- {key: loss.train, label: first loss, stat: first}")
    loaded, cells, by, store = _setup(tmp_path, text)
    acc = {(0.1, 0): 0.5, (0.1, 1): 0.7, (0.2, 0): 0.9}  # (0.2, 1) missing
    for key, value in acc.items():
        series = [("main", "loss.train", 0, 2.0 + value), ("main", "loss.train", 5, 1.0),
                  ("main", "nccc.accuracy", 0, math.nan), ("main", "nccc.accuracy", 20, value)]
        store.write(by[key], CellResult(by[key].id, "complete", series=series,
                                        finals={"nccc.accuracy": value, "loss.train": 1.0}),
                    {"git_sha": "abc", "torch": "2.x"})
    for seed in (0, 1):  # lr 0.3 diverged in both seeds
        store.write(by[(0.3, seed)], CellResult(by[(0.3, seed)].id, "diverged",
                                                error="non-finite loss at step 3"), {})
    md = render(Study(loaded, registry()), store, tmp_path / "lb" / "s.md")
    rows = {row[0]: row[1:] for row in _table(md)}

    # mean ± t_{0.975, 1} * s / sqrt(2), with t_{0.975, 1} = 12.7062047 (tables)
    mean, half = statistics.fmean([0.5, 0.7]), 12.706204736 * statistics.stdev([0.5, 0.7]) / 2**.5
    assert rows["0.1"][0] == f"{mean:.4g} ± {half:.4g} (n=2)"
    assert rows["0.2"][0] == "**0.9 (n=1/2)**"  # best (accuracy: higher), one seed missing
    assert rows["0.3"][0] == "— †2"
    first, half = statistics.fmean([2.5, 2.7]), 12.706204736 * statistics.stdev([2.5, 2.7]) / 2**.5
    assert rows["0.1"][1] == f"**{first:.4g} ± {half:.4g} (n=2)**"  # loss: lower is better
    assert "- cells: 6 (3 complete, 2 diverged, 1 missing)" in md
    assert "| NCCC accuracy | `nccc.accuracy` | held-out accuracy" in md  # legend
    csv_rows = (tmp_path / "lb" / "s.csv").read_text().splitlines()
    assert csv_rows[1].startswith("0.1,nccc.accuracy,last,mean,0.6")
    assert (tmp_path / "lb" / "s_loss.train.png").exists()
    assert (tmp_path / "lb" / "s_nccc.accuracy.png").exists()
    assert "![nccc.accuracy](s_nccc.accuracy.png)" in md


def test_main_table_has_ten_columns_and_diagnostic_columns_are_never_bold(tmp_path):
    text = small_suite(lrs=(0.1, 0.2)).replace(
        "    - {name: nccc, every: 10}", "    - {name: nccc, every: 10}\n"
        "    - {name: effective_rank, every: 10}")
    metrics = ["    - {key: effective_rank.erank, label: erank}"] + [
        f"    - {{key: nccc.accuracy, label: acc{i}}}" for i in range(11)]
    text = text.replace("    - {key: nccc.accuracy, label: NCCC accuracy}\n"
                        "    - {key: loss.train, label: final loss}", "\n".join(metrics))
    text = text.replace("  rows: [optimizer.lr]", "  rows: [optimizer.lr]\n"
                                                  "  columns: trial_seed")
    (tmp_path / "s.yaml").write_text(text)
    loaded = load_suite(tmp_path / "s.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:
        lr = cell.varied["optimizer.lr"]
        finals = {"nccc.accuracy": lr + cell.trial_seed, "effective_rank.erank": 10 * lr}
        store.write(cell, CellResult(cell.id, "complete", finals=finals), {})
    md = render(Study(loaded, registry()), store, tmp_path / "s.md")
    tables = [block for block in md.split("\n\n") if block.startswith("|")]
    main = tables[0].splitlines()
    assert main[0].count("|") - 1 == 10  # lr, trial_seed (columns key), 8 metrics
    assert "erank" in main[0] and "acc6" in main[0] and "acc7" not in main[0]
    more = md.split("### More results")[1]
    assert "acc7" in more and "acc10" in more
    erank = [row.split("|")[3].strip() for row in main[2:]]
    assert erank[0].startswith("1 (n=1)") and not any("**" in e for e in erank)
    acc = [row.split("|")[4].strip() for row in main[2:]]
    assert sum("**" in a for a in acc) == 1  # accuracy has a direction: the best is bold
    assert "### acc0 by trial_seed" in md  # the pivoted detail table


def test_a_pipe_in_a_legend_cell_is_escaped():
    import re

    from geobench.contract.param_models import FieldDoc
    from geobench.report.leaderboard import _legend
    from geobench.suite.schema import LeaderboardMetric

    md = _legend([LeaderboardMetric(key="m.f", label="a|b")],
                 [FieldDoc("max|x| over y", "count", "higher")])
    row = md.strip().splitlines()[-1]
    assert len(re.findall(r"(?<!\\)\|", row)) == 8  # 7 cells
    assert "a\\|b" in row and "max\\|x\\| over y" in row


def test_a_column_that_names_nan_counts_and_shows_it(tmp_path):
    text = small_suite(lrs=(0.1, 0.2, 0.3)).replace(
        "- {key: loss.train, label: final loss}",
        "- {key: loss.train, label: final loss, nan: vacuous}")
    loaded, cells, by, store = _setup(tmp_path, text)
    loss = {(0.1, 0): 1.0, (0.1, 1): 3.0, (0.2, 0): math.nan, (0.2, 1): 2.5,
            (0.3, 0): math.nan, (0.3, 1): math.nan}
    for key, value in loss.items():
        series = [("main", "loss.train", 0, value), ("main", "nccc.accuracy", 0, 0.5)]
        store.write(by[key], CellResult(by[key].id, "complete", series=series,
                                        finals={"loss.train": value, "nccc.accuracy": 0.5}),
                    {"git_sha": "abc", "torch": "2.x"})
    md = render(Study(loaded, registry()), store, tmp_path / "lb" / "s.md")
    rows = {row[0]: row[1:] for row in _table(md)}
    half = 12.706204736 * statistics.stdev([1.0, 3.0]) / 2**.5
    assert rows["0.1"][1] == f"**2 ± {half:.4g} (n=2)**"  # loss: lower is better
    assert rows["0.2"][1] == "2.5 (n=1/2) vacuous 1/2"
    assert rows["0.3"][1] == "vacuous (n=2/2)"
    assert rows["0.3"][0] == "**0.5 ± 0 (n=2)**"  # a column without `nan` is unchanged


def test_a_metric_of_some_design_points_keeps_its_declared_meaning(tmp_path):
    """Columns and claims read a field's meaning from a cell that measures it, not from the
    first cell (design points may measure different metrics)."""
    from geobench.claims.values import declared, field_doc
    from geobench.contract.manager import registry
    from geobench.suite import load_suite
    from tests.core.suite_text import CLAIMS_BASE

    text = "name: points\n" + CLAIMS_BASE + """\
zip:
  - tags.d: [a, b]
    metrics: [[{name: nccc}], [{name: linear_probe}]]
"""
    (tmp_path / "p.yaml").write_text(text)
    cells = Study(load_suite(tmp_path / "p.yaml"), registry()).cells
    assert field_doc(registry(), cells[0], "linear_probe.accuracy") is None
    doc = declared(registry(), cells, "linear_probe.accuracy")
    assert doc is not None and doc.direction == "higher"
