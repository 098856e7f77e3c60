"""Leaderboard tables: titled tables filtered by ``where``, constant row keys stated once, the
10-column split, header labels, the CSV with a table column, and plots against step × value.
Values are written straight into a store (no training)."""

import csv
import statistics

import matplotlib.axes
import pytest

from geobench.claims.stats import t_half_width
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.report.leaderboard import render
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite

LEADERBOARD = "leaderboard:" + small_suite().split("\nleaderboard:", 1)[1]


def _suite(tmp_path, board: str, arms: bool = True, lrs=(0.1, 0.2, 0.3)):
    """The small suite (lr grid, 2 trial seeds; arms a and b), its leaderboard ``board``,
    and a store where arm a reads accuracy lr + seed / 10 and arm b ten times that."""
    text = small_suite(lrs=lrs).replace(LEADERBOARD, board)
    text = text.replace("  metrics:\n    - {name: nccc, every: 10}\n",
                        "  metrics:\n    - {name: nccc, every: 10}\n  tags: {T: 16}\n")
    if arms:
        text += "arms:\n  a: {}\n  b: {}\n"
    (tmp_path / "s.yaml").write_text(text)
    loaded = load_suite(tmp_path / "s.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:
        lr = cell.varied["optimizer.lr"]
        acc = {"a": lr + cell.trial_seed / 10}
        acc["b"] = 10 * acc["a"]
        names = list(cell.arms)
        series = [(arm, key, step, value) for arm in names
                  for key, value in (("nccc.accuracy", acc.get(arm, acc["a"])),
                                     ("loss.train", 1.0 + lr))
                  for step in (0, 5, 10)]
        store.write(cell, CellResult(cell.id, "complete", series=series), {})
    return loaded, cells, store


def _tables(md: str) -> dict[str, list[list[str]]]:
    """Each markdown table under its heading: header row first, separator left out."""
    out, heading = {}, None
    for block in md.split("\n\n"):
        if block.startswith("#"):
            heading = block.lstrip("#").strip()
        elif block.startswith("|") and heading is not None and heading not in out:
            lines = [ln for ln in block.splitlines() if not ln.startswith("|-")]
            out[heading] = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    return out


def _render(tmp_path, loaded, store) -> str:
    return render(Study(loaded, registry()), store, tmp_path / "lb" / "s.md")


def _render_board(tmp_path, board: str) -> str:
    loaded, _, store = _suite(tmp_path, board)
    return _render(tmp_path, loaded, store)


def test_a_titled_table_shows_only_the_cells_and_arms_where_selects(tmp_path):
    board = """\
leaderboard:
  tables:
    - title: Small steps, arm b
      where: {optimizer.lr: [0.2, 0.1], arm: b}
      rows: [optimizer.lr, arm]
      metrics: [{key: nccc.accuracy, label: acc, fmt: .3g}]
    - title: Both arms at lr 0.3
      where: {optimizer.lr: 0.3}
      rows: [arm]
      metrics: [{key: nccc.accuracy, label: acc, fmt: .3g}]
"""
    md = _render_board(tmp_path, board)
    tables = _tables(md)
    assert list(tables) == ["Small steps, arm b", "Both arms at lr 0.3", "Columns"]
    small = tables["Small steps, arm b"]
    assert small[0] == ["optimizer.lr", "acc"]  # arm takes one value: stated, not shown
    # the rows follow where's order (0.2 before 0.1); arm b's values: 10 * (lr + seed/10)
    assert [row[0] for row in small[1:]] == ["0.2", "0.1"]
    assert small[1][1].startswith("**2.5 ± ") and small[2][1].startswith("1.5 ± ")
    assert "### Small steps, arm b\n\nAll rows: arm = b.\n\n|" in md
    both = tables["Both arms at lr 0.3"]
    assert [row[0] for row in both[1:]] == ["a", "b"]
    assert both[1][1].startswith("0.35 ± ") and both[2][1].startswith("**3.5 ± ")
    assert "All rows" not in md.split("### Both arms at lr 0.3")[1].split("|")[0]
    assert "More results" not in md and "| optimizer.lr | arm |" not in md
    legend = md.split("### Columns")[1]
    assert legend.count("| acc | `nccc.accuracy` |") == 1  # every metric once


def test_a_constant_row_key_is_dropped_and_stated_in_the_main_table(tmp_path):
    board = LEADERBOARD.replace("rows: [optimizer.lr]", "rows: [optimizer.lr, tags.T]")
    loaded, cells, store = _suite(tmp_path, board, arms=False)
    md = _render(tmp_path, loaded, store)
    assert "## Results\n\nAll rows: tags.T = 16.\n\n|" in md
    main = _tables(md)["Results"]
    assert main[0] == ["optimizer.lr", "NCCC accuracy", "final loss"]
    assert [row[0] for row in main[1:]] == ["0.1", "0.2", "0.3"]
    # the CSV keeps every row key (unchanged without tables)
    header = (tmp_path / "lb" / "s.csv").read_text().splitlines()[0]
    assert header == "optimizer.lr,tags.T,metric,stat,agg,value,ci95_half_width,n,expected," \
                     "diverged,shown"


def test_continuation_tables_keep_at_most_ten_columns(tmp_path):
    metrics = "".join(f"        - {{key: nccc.accuracy, label: m{i}}}\n" for i in range(12))
    board = f"""\
leaderboard:
  tables:
    - title: Wide
      rows: [optimizer.lr, arm, tags.T]
      metrics:
{metrics}"""
    md = _render_board(tmp_path, board)
    tables = _tables(md)
    wide, more = tables["Wide"], tables["Wide (continued)"]
    assert wide[0] == ["optimizer.lr", "arm"] + [f"m{i}" for i in range(8)]
    assert more[0] == ["optimizer.lr", "arm"] + [f"m{i}" for i in range(8, 12)]
    assert len(wide) == len(more) == 1 + 6  # 3 lrs x 2 arms
    assert md.count("All rows: tags.T = 16.") == 1
    widths = [len(ln.strip("|").split("|")) for ln in md.split("### Columns")[0].splitlines()
              if ln.startswith("|")]
    assert max(widths) == 10


def test_labels_rename_row_key_headers(tmp_path):
    board = LEADERBOARD.replace("rows: [optimizer.lr]",
                                "rows: [optimizer.lr, arm, tags.T]\n"
                                "  labels: {optimizer.lr: lr, tags.T: T}")
    md = _render_board(tmp_path, board)
    main = _tables(md)["Results"]
    assert main[0][:3] == ["lr", "arm", "NCCC accuracy"]
    assert "All rows: T = 16." in md and "optimizer.lr" not in main[0]


def test_the_csv_of_titled_tables_names_the_table_and_the_union_of_row_keys(tmp_path):
    board = """\
leaderboard:
  metrics: [{key: nccc.accuracy}]
  tables:
    - {title: By lr, rows: [optimizer.lr], where: {arm: a}}
    - {title: By arm, rows: [arm], where: {optimizer.lr: 0.1}}
"""
    _render_board(tmp_path, board)
    rows = list(csv.reader((tmp_path / "lb" / "s.csv").open()))
    assert rows[0] == ["table", "optimizer.lr", "arm", "metric", "stat", "agg", "value",
                       "ci95_half_width", "n", "expected", "diverged", "shown"]
    assert [r[:4] for r in rows[1:]] == [
        ["By lr", "0.1", "", "nccc.accuracy"], ["By lr", "0.2", "", "nccc.accuracy"],
        ["By lr", "0.3", "", "nccc.accuracy"], ["By arm", "", "a", "nccc.accuracy"],
        ["By arm", "", "b", "nccc.accuracy"]]
    assert float(rows[1][6]) == pytest.approx(0.15) and float(rows[5][6]) == pytest.approx(1.5)


def test_the_csv_without_tables_has_the_row_keys_and_each_cell_as_printed(tmp_path):
    loaded, cells, store = _suite(tmp_path, LEADERBOARD, arms=False, lrs=(0.1,))
    _render(tmp_path, loaded, store)
    acc = [0.1 + 0 / 10, 0.1 + 1 / 10]
    mean, half = statistics.fmean(acc), t_half_width(acc)
    assert (tmp_path / "lb" / "s.csv").read_text().splitlines() == [
        "optimizer.lr,metric,stat,agg,value,ci95_half_width,n,expected,diverged,shown",
        f"0.1,nccc.accuracy,last,mean,{mean!r},{half!r},2,2,0,{mean:.4g} ± {half:.4g} (n=2)",
        f"0.1,loss.train,last,mean,{1.0 + 0.1!r},0.0,2,2,0,1.1 ± 0 (n=2)"]


def test_a_plot_with_x_multiplies_the_step_by_the_config_value(tmp_path, monkeypatch):
    board = LEADERBOARD.replace(
        "  plots: [loss.train]",
        "  plots:\n    - {key: loss.train, x: optimizer.lr}\n"
        "    - {key: nccc.accuracy, x: optimizer.lr, xlabel: integrated time T}\n"
        "    - {key: nccc.accuracy, where: {optimizer.lr: 0.2}}")
    loaded, cells, store = _suite(tmp_path, board, arms=False, lrs=(0.1, 0.2))
    drawn, xlabels = [], []
    plot, set_xlabel = matplotlib.axes.Axes.plot, matplotlib.axes.Axes.set_xlabel
    monkeypatch.setattr(matplotlib.axes.Axes, "plot", lambda ax, x, y, **kw: (
        drawn.append((kw["label"], list(x), list(y))), plot(ax, x, y, **kw))[1])
    monkeypatch.setattr(matplotlib.axes.Axes, "set_xlabel", lambda ax, text, **kw: (
        xlabels.append(text), set_xlabel(ax, text, **kw))[1])
    _render(tmp_path, loaded, store)
    assert drawn[:2] == [("optimizer.lr=0.1", [0.0, 0.5, 1.0], [1.1, 1.1, 1.1]),
                         ("optimizer.lr=0.2", [0.0, 1.0, 2.0], [1.2, 1.2, 1.2])]
    assert [x for _, x, _ in drawn[2:4]] == [[0.0, 0.5, 1.0], [0.0, 1.0, 2.0]]
    assert drawn[4][0] == "optimizer.lr=0.2" and drawn[4][1] == [0, 5, 10]  # no x: steps
    assert xlabels == ["step × optimizer.lr", "integrated time T", "step"]


def test_a_plot_where_selects_cells_by_any_listed_value_and_keeps_its_arms(tmp_path,
                                                                            monkeypatch):
    board = LEADERBOARD.replace(
        "  plots: [loss.train]",
        "  plots:\n    - {key: nccc.accuracy, where: {optimizer.lr: [0.1, 0.3], arm: b}}")
    loaded, cells, store = _suite(tmp_path, board)
    drawn = []
    plot = matplotlib.axes.Axes.plot
    monkeypatch.setattr(matplotlib.axes.Axes, "plot", lambda ax, x, y, **kw: (
        drawn.append((kw["label"], list(y))), plot(ax, x, y, **kw))[1])
    _render(tmp_path, loaded, store)
    # arm b reads 10 (lr + seed / 10): the mean over seeds 0 and 1 is 10 lr + 0.5
    assert [(label, pytest.approx(y)) for label, y in drawn] == [
        ("optimizer.lr=0.1 [b]", [1.5] * 3), ("optimizer.lr=0.3 [b]", [3.5] * 3)]
