"""Running a suite's missing cells (geobench.run.runner), with the training replaced by a
stand-in: which cells run, what is stored, the statuses counted, the executor chosen, and
the progress lines from inside a cell. (ETA and per-cell lines: test_progress.py; shared
stores and exit codes: test_run_outcomes.py.)"""

import json
import sqlite3
from collections import Counter

import pytest

from geobench.contract.hooks import hookimpl
from geobench.contract.manager import load_registry, registry
from geobench.contract.registry import RegistryError
from geobench.records import CellResult
from geobench.run import progress, runner
from geobench.run.executors import WorkerDied
from geobench.run.executors.local import LocalExecutor
from geobench.run.progress import StepLines
from geobench.run.runner import (
    CellTask,
    RunOptions,
    build_executor,
    executor_spec,
    run_suite,
)
from geobench.study import Study
from tests.core.suite_text import small_suite

STATUS = {0.05: "complete", 0.1: "diverged", 0.2: "failed"}


def fake_run_cell(cell, progress=None, loggers=(), log_dir="logs"):
    """The cell's status from its learning rate, and one value: lr + trial seed."""
    lr = cell.varied["optimizer.lr"]
    value = lr + cell.trial_seed
    return CellResult(cell.id, STATUS[lr], error=None if lr == 0.05 else "by design",
                      series=[("main", "m.v", 0, value)], finals={"m.v": value},
                      started=1.0, finished=2.0)


@pytest.fixture
def suite(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    (tmp_path / "s.yaml").write_text(small_suite(lrs=(0.05, 0.1, 0.2)))
    return tmp_path


def _run(tmp_path, **options):
    return run_suite(str(tmp_path / "s.yaml"),
                     RunOptions(store=str(tmp_path / "db.sqlite"), quiet=True, **options))


def _stored(tmp_path) -> dict[tuple[float, int], tuple[str, float]]:
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        rows = con.execute("SELECT c.config, c.status, f.value FROM cells c "
                           "JOIN finals f ON f.cell = c.id").fetchall()
    return {(json.loads(cfg)["varied"]["optimizer.lr"], json.loads(cfg)["trial_seed"]):
            (status, value) for cfg, status, value in rows}


def test_every_cell_runs_once_and_its_result_is_stored(suite):
    summary = _run(suite)
    assert len(summary.cells) == 6 and summary.skipped == 0
    assert summary.statuses == Counter({"complete": 2, "diverged": 2, "failed": 2})
    assert _stored(suite) == {(lr, s): (STATUS[lr], lr + s) for lr in STATUS for s in (0, 1)}


def test_a_second_run_retries_only_the_failed_cells_and_rerun_runs_all(suite):
    _run(suite)
    again = _run(suite)
    assert again.skipped == 4 and again.statuses == Counter({"failed": 2})
    everything = _run(suite, rerun=True)
    assert everything.skipped == 0 and sum(everything.statuses.values()) == 6


def test_max_cells_runs_at_most_that_many(suite):
    first = _run(suite, max_cells=4)  # the cells in grid order: lr 0.05, 0.1, then 0.2
    assert first.statuses == Counter({"complete": 2, "diverged": 2})
    assert set(_stored(suite)) == {(lr, s) for lr in (0.05, 0.1) for s in (0, 1)}
    rest = _run(suite, max_cells=4)
    assert rest.skipped == 4 and rest.statuses == Counter({"failed": 2})


def test_a_cell_the_executor_lost_is_stored_as_failed(suite, monkeypatch):
    class Losing(LocalExecutor):
        def map(self, fn, items):
            for cell in items:
                lost = cell.varied["optimizer.lr"] == 0.05 and cell.trial_seed == 1
                yield cell, WorkerDied("worker died: signal 9 (Killed)") if lost else fn(cell)

    monkeypatch.setattr(runner, "build_executor", lambda reg, spec: Losing())
    summary = _run(suite)
    assert summary.statuses["failed"] == 3
    with sqlite3.connect(suite / "db.sqlite") as con:
        errors = [e for (e,) in con.execute("SELECT error FROM cells WHERE status = 'failed'")]
    assert sorted(errors) == ["WorkerDied: worker died: signal 9 (Killed)", "by design",
                              "by design"]


@pytest.mark.parametrize("default, name, options, want", [
    (None, None, {"workers": None}, {"name": "local"}),
    ({"name": "pool", "workers": 4}, None, {}, {"name": "pool", "workers": 4}),
    ({"name": "pool", "workers": 4}, "pool", {"workers": 2}, {"name": "pool", "workers": 2}),
    ({"name": "pool", "workers": 4}, "ray", {"workers": None, "local_cpus": 2},
     {"name": "ray", "local_cpus": 2}),
])
def test_the_executor_spec(default, name, options, want):
    assert executor_spec(default, name, options) == want


def test_build_executor_checks_its_params():
    pool = build_executor(registry(), {"name": "pool", "workers": 3})
    assert pool.workers == 3 and not pool.in_process
    assert build_executor(registry(), {"name": "local"}).in_process
    with pytest.raises(RegistryError, match=r"^executor 'pool': Input should be greater than "
                                            r"or equal to 1 \(got 0\)$"):
        build_executor(registry(), {"name": "pool", "workers": 0})
    with pytest.raises(RegistryError, match="'nope' is not a registered executor"):
        build_executor(registry(), {"name": "nope"})


def test_an_executor_that_is_not_the_interface_is_refused():
    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("bare", lambda params, ctx: object(), doc="returns no Executor")

    reg = load_registry(extra_plugins=(Plugin(),))
    with pytest.raises(RegistryError, match=r"^executor 'bare' \(.+\): its factory returned "
                                            r"object, not a geobench.api.Executor$"):
        build_executor(reg, {"name": "bare"})


def test_step_lines_name_the_cell_its_step_and_loss(suite, monkeypatch, capsys):
    from geobench.suite import load_suite

    cell = Study(load_suite(suite / "s.yaml"), registry()).cells[0]
    clock = iter([100.0, 130.0, 130.5, 280.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines = StepLines(cell, every=10.0)  # started at 100
    lines(10, 20, 0.123456)  # at 130: 30 s since the last line
    lines(11, 20, 0.1)  # at 130.5: too soon
    lines(20, 20, 0.05)  # at 280
    assert capsys.readouterr().err.splitlines() == [
        f"  small {cell.label()}: step 10/20, loss 0.1235 (30 s in)",
        f"  small {cell.label()}: step 20/20, loss 0.05 (3 min in)"]


def test_a_cell_task_reports_through_step_lines_only_without_a_bar(monkeypatch):
    seen = []
    def fake_run(cell, progress=None, loggers=(), log_dir="logs"):
        seen.append(progress)
        return CellResult(cell, "complete")

    monkeypatch.setattr(runner, "run_cell", fake_run)
    monkeypatch.setattr(runner, "StepLines", _NoThread)
    bar = object()
    CellTask(every=60.0)("cell", bar)
    CellTask(every=None)("cell")
    got = CellTask(every=60.0, claims={"c": "0123"})("cell")
    assert seen[0] is bar and seen[1] is None and isinstance(seen[2], _NoThread)
    assert got.claims == {"c": "0123"}  # the suite's claim digests travel with the result


class _NoThread:
    def __init__(self, cell, every):
        self.every = every

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
