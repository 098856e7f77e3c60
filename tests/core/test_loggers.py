"""Experiment trackers: what TensorBoard and W&B (offline) hold after a run equals the store;
a failing logger never fails a cell; loggers are selected by flag or by the suite."""

import itertools
import json
import math
import os
import signal
import struct
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from geobench.cli import main
from geobench.config import Component
from geobench.engine import run_cell
from geobench.loggers import run_folder
from geobench.loggers.tensorboard import TensorBoardParams
from geobench.plugins import load_registry
from geobench.records import Cell
from geobench.registry import EmptyParams, Entry
from geobench.store import Store
from geobench.suite import expand, load_suite
from tests.conftest import start_cli
from tests.core.suite_text import small_suite

TWO_ARMS = "arms:\n  slow: {optimizer: {lr: 0.02}}\n  fast: {optimizer: {lr: 0.2}}\n"
CROSS = "    - {name: cka, every: 10}\n"


def _suite(tmp_path: Path) -> Path:
    """The small suite with two arms and a cross-arm metric: tags of both kinds occur."""
    text = small_suite(steps=25, lrs=(0.1,)).replace("grid:\n  optimizer.lr: [0.1]\n", "")
    nccc = "    - {name: nccc, every: 10}\n"
    text = text.replace(nccc, nccc + CROSS)
    path = tmp_path / "s.yaml"
    path.write_text(text + TWO_ARMS)
    return path


def _stored(store: Path) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """cell -> tag (``<arm>/<metric>.<field>``) -> [(step, value)], read from SQLite."""
    db = Store(store)
    try:
        ids = [r[0] for r in db.db.execute("SELECT id FROM cells")]
        out: dict[str, dict[str, list[tuple[int, float]]]] = {i: {} for i in ids}
        for cell, arm, metric, step, value in db.series(ids):
            out[cell].setdefault(f"{arm}/{metric}", []).append((step, value))
    finally:
        db.close()
    return out


def _cells(path: Path):
    return expand(load_suite(path), load_registry(), "smoke")


@pytest.mark.parametrize("executor", ["local", "pool"])
def test_tensorboard_scalars_equal_the_stored_series(tmp_path, executor):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    path, logs, store = _suite(tmp_path), tmp_path / "tb", tmp_path / "db.sqlite"
    assert main(["run", str(path), "--store", str(store), "--logger", "tensorboard",
                 "--log-dir", str(logs), "--executor", executor, "--quiet",
                 "--no-leaderboard"]) == 0
    stored, cells = _stored(store), _cells(path)
    assert len(cells) == 2 and set(stored) == {c.id for c in cells}
    for cell in cells:
        folder = logs / "small" / f"trial_seed={cell.trial_seed}-{cell.id[:8]}"
        assert run_folder(logs, cell) == folder
        events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
        events.Reload()
        series = stored[cell.id]
        assert {"slow/loss.train", "fast/loss.train", "slow~fast/cka.debiased"} <= set(series)
        assert set(events.Tags()["scalars"]) == set(series)
        for tag, rows in series.items():
            got = [(e.step, e.value) for e in events.Scalars(tag)]
            assert [s for s, _ in got] == [s for s, _ in rows], tag
            want = np.float32([v for _, v in rows])  # TensorBoard keeps float32 scalars
            np.testing.assert_array_equal(np.float32([v for _, v in got]), want, err_msg=tag)
        text = events.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
        assert json.loads(text.replace("\n    ", "\n")) == json.loads(json.dumps(cell.config()))
        assert _hparams_sessions(folder) == [
            ("session_start_info", {"suite": "small", "profile": "smoke",
                                    "trial_seed": cell.trial_seed}),
            ("session_end_info", "STATUS_SUCCESS")]


def _hparams_sessions(folder: Path) -> list[tuple[str, object]]:
    """The HParams plugin's summaries in ``folder``'s event files, in order: the start
    info's hparams, the end info's status (and ``experiment``, if any, as written)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

    out: list[tuple[str, object]] = []
    for file in sorted(folder.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(file)).Load():
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "hparams":
                    continue
                data = plugin_data_pb2.HParamsPluginData.FromString(
                    value.metadata.plugin_data.content)
                kind = data.WhichOneof("data")
                if kind == "session_start_info":
                    hp = data.session_start_info.hparams
                    out.append((kind, {k: v.WhichOneof("kind") and getattr(
                        v, v.WhichOneof("kind")) for k, v in hp.items()}))
                elif kind == "session_end_info":
                    out.append((kind, api_pb2.Status.Name(data.session_end_info.status)))
                else:
                    out.append((kind, None))
    return out


def test_run_folders_are_one_per_cell_when_varied_keys_are_long():
    long = {"metrics": "x" * 400}
    cells = [Cell(f"{i:x}" * 16, "s", profile, seed, {}, {**long, "trial_seed": seed})
             for i, (profile, seed) in enumerate([("smoke", 0), ("smoke", 1), ("full", 0)])]
    assert cells[1].label() == "metrics=" + "x" * 39 + "…, trial_seed=1"
    folders = [run_folder("/logs", c) for c in cells]
    assert len(set(folders)) == 3
    assert [str(f.parent) for f in folders] == ["/logs/s", "/logs/s", "/logs/s_full"]
    assert folders[1].name == "metrics=" + "x" * 39 + "_,trial_seed=1-" + "1" * 8
    wide = Cell("2" * 16, "s", "smoke", 0, {}, {f"k{i}": "y" * 30 for i in range(9)})
    assert len(run_folder("/logs", wide).name) == 150 + 9


def _wandb_records(folder: Path) -> list:
    """Every record of the one offline run under ``folder``: the file is ``:W&B`` + 0xBEE1 +
    a version byte, then a LevelDB log (32 KiB blocks of checksum, length, type, data)."""
    from wandb.proto import wandb_internal_pb2 as pb

    (file,) = folder.glob("wandb/offline-run-*/run-*.wandb")
    raw, pos, part, records = file.read_bytes(), 7, b"", []
    assert raw[:6] == b":W&B\xe1\xbe"
    while pos + 7 <= len(raw):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, size, kind = struct.unpack("<IHB", raw[pos:pos + 7])
        part, pos = part + raw[pos + 7:pos + 7 + size], pos + 7 + size
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(part)
            records.append(record)
            part = b""
    return records


def test_wandb_offline_history_equals_the_stored_series(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_SILENT", "true")
    path, logs, store = _suite(tmp_path), tmp_path / "wb", tmp_path / "db.sqlite"
    assert main(["run", str(path), "--store", str(store), "--logger", "wandb", "--log-dir",
                 str(logs), "--quiet", "--no-leaderboard"]) == 0
    stored = _stored(store)
    for cell in _cells(path):
        records = _wandb_records(run_folder(logs, cell))
        got: dict[str, list[tuple[int, float]]] = {}
        for r in records:
            if r.WhichOneof("record_type") == "history":
                items = {i.key or ".".join(i.nested_key): json.loads(i.value_json)
                         for i in r.history.item}
                for tag, value in items.items():
                    if "/" in tag:
                        got.setdefault(tag, []).append((items["step"], value))
        series = stored[cell.id]
        assert set(got) == set(series)
        for tag, rows in series.items():
            assert [s for s, _ in got[tag]] == [s for s, _ in rows], tag
            assert all(a == b or (math.isnan(a) and math.isnan(b))
                       for (_, a), (_, b) in zip(rows, got[tag])), tag
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        assert run.display_name == f"trial_seed={cell.trial_seed}" and run.run_group == "small"
        config = {i.key or ".".join(i.nested_key): json.loads(i.value_json)
                  for i in run.config.update}
        assert config["arms"]["fast"]["optimizer"]["lr"] == 0.2


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
    cells = expand(load_suite(tmp_path / "s.yaml"), reg, "smoke")
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
    monkeypatch.setattr("geobench.loggers.WARNED", set())
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

    monkeypatch.setattr("geobench.engine._train", interrupt)
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
    cell = expand(load_suite(tmp_path / "s.yaml"), reg, "smoke")[0]
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
    monkeypatch.setattr("geobench.loggers.WARNED", set())
    target = ("torch.utils.tensorboard.summary.hparams" if step == "start"
              else "geobench.loggers.tensorboard._session_end")
    monkeypatch.setattr(target, fail)
    (tmp_path / "s.yaml").write_text(small_suite(steps=10, lrs=(0.1,)))
    cell = _cells(tmp_path / "s.yaml")[0]
    tensorboard = Component("tensorboard", TensorBoardParams())
    result = run_cell(cell, loggers=(tensorboard,), log_dir=tmp_path)
    assert result.status == "complete"
    assert f"logger 'tensorboard' failed to {step} (RuntimeError: proto mismatch)" in (
        capsys.readouterr().err)
    assert len(writers) == 1 and writers[0].all_writers is None  # closed


def test_a_suite_selects_loggers_and_a_bad_one_is_a_one_line_error(tmp_path, capsys):
    text = small_suite(steps=5, lrs=(0.1,))
    (tmp_path / "ok.yaml").write_text(text + "loggers: [tensorboard]\n")
    assert main(["run", str(tmp_path / "ok.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--quiet", "--no-leaderboard"]) == 0
    assert len(list((tmp_path / "logs" / "small").glob("*/events.out.tfevents.*"))) == 2
    capsys.readouterr()
    (tmp_path / "bad.yaml").write_text(text + "loggers: [tensorbored]\n")
    assert main(["validate", str(tmp_path / "bad.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{tmp_path / 'bad.yaml'}:") and "loggers" in err
    assert "'tensorbored' is not a registered logger" in err and "tensorboard" in err
    assert "\n" not in err
    (tmp_path / "param.yaml").write_text(text + "loggers: [{name: wandb, project: ''}]\n")
    assert main(["validate", str(tmp_path / "param.yaml")]) == 2
    assert "project" in capsys.readouterr().err
    (tmp_path / "twice.yaml").write_text(text + "loggers: [tensorboard, tensorboard]\n")
    assert main(["validate", str(tmp_path / "twice.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{tmp_path / 'twice.yaml'}:") and "loggers" in err
    assert "'tensorboard' is listed twice" in err and "\n" not in err


def test_a_log_dir_that_cannot_be_written_stops_the_run_before_any_cell(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    (tmp_path / "file").write_text("not a folder")
    store = tmp_path / "db.sqlite"
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(store), "--logger",
                 "tensorboard", "--log-dir", str(tmp_path / "file" / "logs"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"log dir '{tmp_path / 'file' / 'logs'}': cannot write there (")
    assert err.endswith("); choose another with --log-dir") and "\n" not in err
    assert not store.exists()


def test_a_missing_package_stops_the_run_before_any_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    store = tmp_path / "db.sqlite"
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(store), "--logger",
                 "tensorboard", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("logger 'tensorboard' cannot be used: ImportError: the tensorboard logger "
                   "needs the tensorboard package: pip install 'geobench[tensorboard]'")
    assert not store.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["run", str(tmp_path / "s.yaml"), "--store", str(store), "--logger",
                     "nope", "--quiet"]) == 2
    assert "'nope' is not a registered logger" in capsys.readouterr().err


def test_a_log_dir_without_a_logger_is_noted_and_not_used(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--log-dir", str(tmp_path / "tb"), "--no-leaderboard"]) == 0
    (first, *_) = capsys.readouterr().err.splitlines()
    assert first == (f"geobench: --log-dir {tmp_path / 'tb'} is not used: "
                     f"{tmp_path / 's.yaml'} selects no logger (add --logger NAME)")
    assert not (tmp_path / "tb").exists()


@pytest.mark.parametrize("executor, group", [
    ("local", False), ("pool", False),
    ("pool", True),  # SIGTERM to every process (as Slurm does), then the parent's own
])
def test_a_terminated_run_ends_its_cells_sessions_as_interrupted(tmp_path, executor, group):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (tmp_path / "s.yaml").write_text(small_suite(steps=20000, lrs=(0.1,)))
    proc = start_cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard",
                      "--executor", executor, "--logger", "tensorboard", "--log-dir", "tb"],
                     tmp_path, new_session=group)
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

    monkeypatch.setattr("geobench.loggers.tensorboard.TensorBoardLogger.log", fail)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    for _ in range(2):
        assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                     "--logger", "tensorboard", "--quiet", "--no-leaderboard", "--rerun"]) == 0
    assert capsys.readouterr().err.count("logger 'tensorboard' failed to log") == 2
