"""Experiment trackers: what TensorBoard and W&B (offline) hold after a run equals the store;
loggers are selected by flag or by the suite (failing and stopped loggers:
test_logger_failures.py)."""

import json
import math
import struct
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from geobench.cli import main
from geobench.contract.manager import load_registry
from geobench.records import Cell
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.logs import run_folder
from tests.core.suite_text import small_suite

TWO_ARMS = "arms:\n  slow: {optimizer: {lr: 0.02}}\n  fast: {optimizer: {lr: 0.2}}\n"
CROSS = "    - {name: toy_cka, every: 10}\n"


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
    return Study(load_suite(path), load_registry(), "smoke").cells


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
        assert {"slow/loss.train", "fast/loss.train", "slow~fast/toy_cka.debiased"} <= set(series)
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


def test_tensorboard_ends_a_diverged_arm_and_the_cell_goes_on(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    path, logs, store = _suite(tmp_path), tmp_path / "tb", tmp_path / "db.sqlite"
    path.write_text(path.read_text().replace(
        "fast: {optimizer: {lr: 0.2}}", "fast: {objective: {name: toy_ce_nan_at, at: 13}}"))
    assert main(["run", str(path), "--store", str(store), "--logger", "tensorboard",
                 "--log-dir", str(logs), "--quiet", "--no-leaderboard"]) == 0
    stored = _stored(store)
    for cell in _cells(path):
        events = EventAccumulator(str(run_folder(logs, cell)),
                                  size_guidance={"scalars": 0, "tensors": 0})
        events.Reload()
        series = stored[cell.id]
        assert set(events.Tags()["scalars"]) == set(series)
        for tag, rows in series.items():
            assert [e.step for e in events.Scalars(tag)] == [s for s, _ in rows], tag
        assert max(s for tag, rows in series.items() if tag.startswith("fast/")
                   for s, _ in rows) == 12
        assert max(s for s, _ in series["slow/loss.train"]) == 24  # trained to the end
        (status,) = events.Tensors("fast/status/text_summary")
        assert status.tensor_proto.string_val[0].decode() == (
            "diverged at step 13: non-finite loss nan at step 13 (arm fast)")
        assert _hparams_sessions(run_folder(logs, cell))[-1] == (
            "session_end_info", "STATUS_SUCCESS")  # the cell is complete


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
    assert cells[1].label() == "metrics=" + "x" * 47 + "…, trial_seed=1"
    folders = [run_folder("/logs", c) for c in cells]
    assert len(set(folders)) == 3
    assert [str(f.parent) for f in folders] == ["/logs/s", "/logs/s", "/logs/s_full"]
    assert folders[1].name == "metrics=" + "x" * 47 + "_,trial_seed=1-" + "1" * 8
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
