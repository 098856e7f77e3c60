"""A metric that raises on one arm fails that arm's metric alone: the cell completes, the
other arms and metrics keep their values, and the failure is stored and shown (progress line,
``results --failed``, the page). A head that raises fails the cell as before; ``results
--failed`` prints its id, varied keys, error and traceback, and the one-line error names the
plugin and the file:line of the ``raise``."""

from __future__ import annotations

import csv
import inspect
import io
import sqlite3

import pytest

from geobench.cli import main
from geobench.contract import manager as loader
from geobench.run.store import Store
from tests.conftest import run_cli
from tests.core import raising_plugin
from tests.core.suite_text import small_suite

STEPS = 20  # metrics every 10 steps: measured at steps 0, 10 and 20


def _raise_line(method) -> int:
    """The line number of the ``raise`` statement in ``method``'s source."""
    lines, first = inspect.getsourcelines(method)
    return first + next(i for i, line in enumerate(lines) if line.strip().startswith("raise "))


@pytest.fixture
def raising():
    """The raising components as a built-in of this process (plugin ``raising``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(loader.BUILTINS, "raising", raising_plugin.__name__)
        loader.plugins.cache_clear()
        loader.registry.cache_clear()
        yield
    loader.plugins.cache_clear()
    loader.registry.cache_clear()


def _two_arm_suite(tmp_path, metrics: list[str], name: str = "s.yaml") -> None:
    text = small_suite(steps=STEPS, lrs=(0.1,)).replace("seeds: 2", "seeds: 1")
    text = text.replace("    - {name: nccc, every: 10}\n",
                        "".join(f"    - {m}\n" for m in ["{name: nccc, every: 10}", *metrics]))
    text = text.replace("  rows: [optimizer.lr]", "  rows: [arm]")
    if any("raise_on_arm" in m for m in metrics):
        text = text.replace("    - {key: loss.train, label: final loss}",
                            "    - {key: raise_on_arm.value, label: step}")
    (tmp_path / name).write_text(text + "arms:\n  a: {}\n  b: {}\n")


def _series(path) -> dict[tuple[str, str], list[tuple[int, float]]]:
    out: dict[tuple[str, str], list[tuple[int, float]]] = {}
    with sqlite3.connect(path) as db:
        for arm, metric, step, value in db.execute(
                "SELECT arm, metric, step, value FROM series ORDER BY step"):
            out.setdefault((arm, metric), []).append((step, value))
    return out


def test_a_metric_raising_on_one_arm_fails_that_metric_there_alone(tmp_path, monkeypatch,
                                                                   capsys, raising):
    monkeypatch.chdir(tmp_path)
    _two_arm_suite(tmp_path, ["{name: raise_on_arm, arm: b, every: 10}"])
    _two_arm_suite(tmp_path, [], "plain.yaml")  # the same cell without the failing metric
    assert main(["run", "s.yaml", "--store", "db.sqlite"]) == 0
    out, err = capsys.readouterr()
    assert "1 cells: 0 already stored, 1 run (1 complete, 0 diverged, 0 failed)" in out
    assert main(["run", "plain.yaml", "--store", "plain.sqlite", "--quiet",
                 "--no-leaderboard"]) == 0
    capsys.readouterr()

    line = _raise_line(raising_plugin.RaiseOnArm.__call__)
    error = (f"ValueError: raise_on_arm refuses arm b "
             f"[plugin raising (geobench), tests/core/raising_plugin.py:{line}]")
    assert f"metric raise_on_arm failed on arm b at step 0: {error}" in err  # progress line

    series, plain = _series("db.sqlite"), _series("plain.sqlite")
    assert series[("a", "raise_on_arm.value")] == [(0, 0.0), (10, 10.0), (20, 20.0)]
    assert ("b", "raise_on_arm.value") not in series
    for arm in ("a", "b"):  # the other metric and the training loss as without the failure
        for metric in ("nccc.accuracy", "loss.train"):
            assert series[(arm, metric)] == plain[(arm, metric)], (arm, metric)

    store = Store("db.sqlite", read_only=True)
    try:
        (cell_id, row), = store.cells([r for r, in store.db.execute(
            "SELECT id FROM cells")]).items()
    finally:
        store.close()
    assert row["status"] == "complete"
    assert {name: a.status for name, a in row["arms"].items()} == {"a": "complete",
                                                                   "b": "complete"}
    assert "b/raise_on_arm.value" not in row["metrics"]
    assert row["metrics"]["a/raise_on_arm.value"] == 20.0
    (failure,) = row["metric_failures"]
    assert (failure.arm, failure.metric, failure.step, failure.error) == (
        "b", "raise_on_arm", 0, error)
    assert 'raise ValueError(f"raise_on_arm refuses arm {ctx.arm_name}")' in failure.traceback

    assert main(["results", "s.yaml", "--store", "db.sqlite", "--failed"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"cell {cell_id}: metric raise_on_arm failed on arm b at step 0\n"
                            f"  varied: lr=0.1, trial_seed=0\n  error: {error}\n"
                            "  traceback:\n    Traceback (most recent call last):\n")
    assert shown.rstrip().endswith("ValueError: raise_on_arm refuses arm b")

    page = (tmp_path / "leaderboards" / "small.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|")[-2].strip()
            for line in page.split("## Results")[1].split("| column |")[0].splitlines()
            if line.startswith("| a ") or line.startswith("| b ")}
    assert rows == {"a": "20 (n=1)", "b": "— ✗1"}  # the step column: b's metric failed
    failed = page.split("## Failed metrics\n")[1]
    assert (f"| {cell_id} | lr=0.1, trial_seed=0 | b     | raise_on_arm |      0 | {error} |"
            in failed)


def test_a_claim_leaves_out_the_arm_whose_metric_failed_saying_so(tmp_path, monkeypatch,
                                                                   capsys, raising):
    monkeypatch.chdir(tmp_path)
    _two_arm_suite(tmp_path, ["{name: raise_on_arm, arm: b, every: 10}"])
    text = (tmp_path / "s.yaml").read_text().replace("seeds: 1", "seeds: 3")
    text += ('claims:\n  - {id: c, statement: s, metric: raise_on_arm.value, expect: "> -1", '
             "where: {arm: [a, b]}}\n")
    (tmp_path / "s.yaml").write_text(text)
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]) == 0
    capsys.readouterr()
    assert main(["claims", "s.yaml", "--store", "db.sqlite", "--units", "--csv"]) == 0
    units = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted((u["trial_seed"], u["arm"], u["d"], u["excluded"]) for u in units) == [
        (seed, arm, "21.0" if arm == "a" else "", "" if arm == "a" else
         "metric failed at step 0") for seed in "012" for arm in "ab"]  # a: 20 - (-1)


def test_an_observing_metric_that_raises_leaves_none_of_its_values_on_that_arm(
        tmp_path, monkeypatch, capsys, raising):
    monkeypatch.chdir(tmp_path)
    _two_arm_suite(tmp_path, ["{name: raise_observing, arm: a, at: 3, every: 10}"])
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]) == 0
    capsys.readouterr()
    series = _series("db.sqlite")
    # arm b observed every step before each evaluation; arm a's value at step 0 is gone too
    assert series[("b", "raise_observing.steps")] == [(0, 0.0), (10, 10.0), (20, 20.0)]
    assert ("a", "raise_observing.steps") not in series
    assert [s for s, _ in series[("a", "nccc.accuracy")]] == [0, 10, 20]
    with sqlite3.connect("db.sqlite") as db:
        rows = db.execute("SELECT arm, metric, step, error FROM metric_failures").fetchall()
    line = _raise_line(raising_plugin.RaiseObserving.observe)
    assert rows == [("a", "raise_observing", 3, "RuntimeError: raise_observing refuses step 3 "
                     f"[plugin raising (geobench), tests/core/raising_plugin.py:{line}]")]


def test_a_head_that_raises_fails_the_cell_and_results_failed_shows_it(tmp_path, site):
    raising_plugin.install(site)
    text = small_suite(steps=STEPS, lrs=(0.1,)).replace("seeds: 2", "seeds: 1")
    text = text.replace("head: {name: identity}", "head: {name: raising_head, after: 3}")
    (tmp_path / "s.yaml").write_text(text.replace("grid:\n", "grid:\n  head.after: [3, 1000]\n"))
    ran = run_cli(["run", "s.yaml", "--store", "db.sqlite", "--no-leaderboard"], tmp_path, site,
                  toy=True)
    assert ran.returncode == 1, ran.stderr
    assert "2 cells: 0 already stored, 2 run (1 complete, 0 diverged, 1 failed)" in ran.stdout
    line = _raise_line(raising_plugin.RaisingHead.forward)
    error = ("RuntimeError: raising_head refuses to project "
             f"[plugin raising (geobench-raising), geobench_raising.py:{line}]")
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        (cell_id, stored), = db.execute(
            "SELECT id, error FROM cells WHERE status = 'failed'").fetchall()
    assert stored == error
    assert f"({cell_id}: {error})" in ran.stderr  # the run's line for the cell
    assert "Traceback" not in ran.stderr

    shown = run_cli(["results", "s.yaml", "--store", "db.sqlite", "--failed"], tmp_path, site,
                    toy=True)
    assert shown.returncode == 0, shown.stderr
    head, trace = shown.stdout.split("  traceback:\n")
    assert head == f"cell {cell_id}: failed\n  varied: after=3, lr=0.1, trial_seed=0\n" \
                   f"  error: {error}\n"
    assert trace.startswith("    Traceback (most recent call last):\n")
    assert f'geobench_raising.py", line {line}, in forward' in trace
    assert trace.rstrip().endswith("RuntimeError: raising_head refuses to project")


def test_results_failed_says_when_nothing_failed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]) == 0
    capsys.readouterr()
    assert main(["results", "s.yaml", "--store", "db.sqlite", "--failed"]) == 0
    assert capsys.readouterr().out == "no failed cell or metric among the 2 cells of the " \
                                      "selection\n"


def test_a_store_without_the_metric_failures_table_reads_and_gains_it(tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]) == 0
    with sqlite3.connect("db.sqlite") as db:  # as a store written before the table existed
        db.execute("DROP TABLE metric_failures")
    store = Store("db.sqlite", read_only=True)
    try:
        ids = [r for r, in store.db.execute("SELECT id FROM cells")]
        assert [row["metric_failures"] for row in store.cells(ids).values()] == [[], []]
    finally:
        store.close()
    capsys.readouterr()
    assert main(["results", "s.yaml", "--store", "db.sqlite", "--failed"]) == 0
    assert "no failed cell or metric among the 2 cells" in capsys.readouterr().out
    assert main(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard",
                 "--rerun"]) == 0
    with sqlite3.connect("db.sqlite") as db:
        assert db.execute("SELECT count(*) FROM metric_failures").fetchone() == (0,)
