"""Loggers that fail or are stopped: a failing logger warns once and never fails the cell,
closes what it opened; a run stopped inside a cell (or while its loggers start) ends them as
interrupted."""

import itertools
import os
import signal
import time
import warnings
from pathlib import Path

import pytest

from geobench.cli import main
from geobench.components.loggers.tensorboard import TensorBoardParams
from geobench.contract.manager import load_registry
from geobench.contract.registry import EmptyParams, Entry
from geobench.contract.spec import Component
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell
from tests.conftest import start_cli
from tests.core.components.test_loggers import _cells, _hparams_sessions
from tests.core.suite_text import small_suite


class _Broken:
    """A logger that raises in ``fails`` (start, log or finish) and records every call."""

    def __init__(self, fails: str, calls: list[str]) -> None:
        self.fails, self.calls = fails, calls

    def _call(self, what: str, detail: str = "") -> None:
        self.calls.append(what + detail)
        if what == self.fails:
            raise OSError("disk full")

    def start(self, run):
        self._call("start")

    def log(self, step, scalars):
        self._call("log")

    def finish(self, status):
        self._call("finish", f":{status}")


def _broken_run(tmp_path: Path, fails: str, calls: list[str]):
    """Run the small suite's cells with a ``_Broken`` logger that records into ``calls``;
    (cells, results, registry)."""
    reg = load_registry()
    reg.add(Entry("loggers", "broken", lambda p, ctx: _Broken(fails, calls), EmptyParams,
                  "raises"))
    (tmp_path / "s.yaml").write_text(small_suite(steps=25, lrs=(0.1,)))
    cells = Study(load_suite(tmp_path / "s.yaml"), reg, "smoke").cells
    results = [run_cell(c, reg, loggers=(Component("broken", EmptyParams()),),
                        log_dir=tmp_path) for c in cells]
    return cells, results, reg


@pytest.mark.parametrize("fails, calls", [
    ("start", ["start", "finish:failed"]),  # told to finish, so that it closes its files
    ("log", ["start", "log", "finish:failed"]),  # off at its first failure
    ("finish", ["start", "log", "finish:complete"]),  # (a log call at each step)
])
def test_a_failing_logger_warns_once_and_the_cell_goes_on(tmp_path, monkeypatch, capsys,
                                                          fails, calls):
    monkeypatch.setattr("geobench.train.logs.WARNED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing of the logger's reaches the cell
        cells, logged, reg = _broken_run(tmp_path, fails, seen := [])
    assert capsys.readouterr().err == (
        f"geobench: logger 'broken' failed to {fails} (OSError: disk full); it is off for the "
        "rest of the cell, which goes on\n")
    assert [k for k, _ in itertools.groupby(seen)] == calls + calls  # in each of two cells
    plain = run_cell(cells[0], reg)
    assert [r.status for r in logged] == ["complete", "complete"]
    assert logged[0].series == plain.series and logged[0].finals == plain.finals


def test_a_run_stopped_inside_a_cell_finishes_its_loggers(tmp_path, monkeypatch):
    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("geobench.train.engine._train", interrupt)
    calls: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        _broken_run(tmp_path, "nothing", calls)
    assert calls == ["start", "finish:interrupted"]


def test_a_run_stopped_while_loggers_start_finishes_those_started(tmp_path, capsys):
    class Stopping(_Broken):  # its finish raises, as after a start that cleaned up
        def start(self, run):
            super().start(run)
            raise KeyboardInterrupt

    first: list[str] = []
    second: list[str] = []
    reg = load_registry()
    reg.add(Entry("loggers", "first", lambda p, ctx: _Broken("nothing", first), EmptyParams, ""))
    reg.add(Entry("loggers", "second", lambda p, ctx: Stopping("finish", second), EmptyParams,
                  ""))
    (tmp_path / "s.yaml").write_text(small_suite(steps=25, lrs=(0.1,)))
    cell = Study(load_suite(tmp_path / "s.yaml"), reg, "smoke").cells[0]
    with pytest.raises(KeyboardInterrupt):
        run_cell(cell, reg, loggers=(Component("first", EmptyParams()),
                                     Component("second", EmptyParams())), log_dir=tmp_path)
    assert first == second == ["start", "finish:interrupted"]
    assert capsys.readouterr().err == ""  # being stopped is no logger's failure


@pytest.mark.parametrize("step", ["start", "finish"])
def test_tensorboard_closes_its_writer_when_a_step_fails(tmp_path, monkeypatch, capsys, step):
    import torch.utils.tensorboard as tb

    writers = []

    class Recorded(tb.SummaryWriter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            writers.append(self)

    def fail(*args):
        raise RuntimeError("proto mismatch")

    monkeypatch.setattr(tb, "SummaryWriter", Recorded)
    monkeypatch.setattr("geobench.train.logs.WARNED", set())
    target = ("torch.utils.tensorboard.summary.hparams" if step == "start"
              else "geobench.components.loggers.tensorboard._session_end")
    monkeypatch.setattr(target, fail)
    (tmp_path / "s.yaml").write_text(small_suite(steps=10, lrs=(0.1,)))
    cell = _cells(tmp_path / "s.yaml")[0]
    tensorboard = Component("tensorboard", TensorBoardParams())
    result = run_cell(cell, loggers=(tensorboard,), log_dir=tmp_path)
    assert result.status == "complete"
    assert f"logger 'tensorboard' failed to {step} (RuntimeError: proto mismatch)" in (
        capsys.readouterr().err)
    assert len(writers) == 1 and writers[0].all_writers is None  # closed


@pytest.mark.parametrize("executor, group", [
    ("local", False), ("pool", False),
    ("pool", True),  # SIGTERM to every process (as Slurm does), then the parent's own
])
def test_a_terminated_run_ends_its_cells_sessions_as_interrupted(tmp_path, site, executor,
                                                                  group):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (tmp_path / "s.yaml").write_text(small_suite(steps=20000, lrs=(0.1,)))
    proc = start_cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard",
                      "--executor", executor, "--logger", "tensorboard", "--log-dir", "tb"],
                     tmp_path, site, new_session=group, toy=True)
    want = 1 if executor == "local" else 2  # cells running at once
    deadline = time.time() + 120
    while time.time() < deadline and len(_started(tmp_path / "tb")) < want:
        time.sleep(0.2)
    time.sleep(1.0)  # into training
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    folders = sorted((tmp_path / "tb" / "small").iterdir())
    assert len(folders) == want
    for folder in folders:
        assert _hparams_sessions(folder)[-1] == ("session_end_info", "STATUS_FAILURE")
        events = EventAccumulator(str(folder), size_guidance={"tensors": 0})
        events.Reload()
        status = events.Tensors("status/text_summary")[0].tensor_proto.string_val[0]
        assert status == b"interrupted"


def _started(logs: Path) -> list[Path]:
    """The cells' event files under ``logs`` (a file is created as its logger starts)."""
    return list(logs.glob("*/*/events.out.tfevents.*"))


def test_each_run_warns_again_about_a_failing_logger(tmp_path, monkeypatch, capsys):
    def fail(self, step, scalars):
        raise OSError("disk full")

    monkeypatch.setattr("geobench.components.loggers.tensorboard.TensorBoardLogger.log", fail)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    for _ in range(2):
        assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                     "--logger", "tensorboard", "--quiet", "--no-leaderboard", "--rerun"]) == 0
    assert capsys.readouterr().err.count("logger 'tensorboard' failed to log") == 2
