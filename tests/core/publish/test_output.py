"""Every file a command publishes goes through one writer: all of a command's files or none,
no temporary file left behind, and an unwritable target is one line and exit 2 (exit 1
means a cell failed and nothing else)."""

import errno
import os

import pytest

import geobench.publish.output as output
from geobench.cli import main
from geobench.publish.output import OutputError, write_files
from tests.core.suite_text import small_suite


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """A folder holding suite.yaml and its complete store db.sqlite."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    assert main(["run", "suite.yaml", "--store", "db.sqlite", "--quiet",
                 "--no-leaderboard"]) == 0
    return tmp_path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning: plugin")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _files(folder) -> set[str]:
    """The folder's files but the store's (SQLite adds its -wal and -shm files to a reader)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")
            if not p.name.startswith("db.sqlite")}


def test_a_leaderboard_over_a_folder_is_refused(stored, capsys):
    (stored / "lb.md").mkdir()
    before = _files(stored)
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", "lb.md"]) == 2
    assert _one_line(capsys) == "lb.md: cannot write: a folder is in the way; give a file path"
    assert _files(stored) == before  # no CSV beside it


def test_a_read_only_leaderboard_is_left_as_it_was(stored, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files; the permission check is what is tested")
    target = stored / "lb.md"
    target.write_text("old")
    target.chmod(0o444)
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", "lb.md"]) == 2
    assert _one_line(capsys) == "lb.md: cannot write: the file is read-only"
    assert target.read_text() == "old" and not (stored / "lb.csv").exists()


def test_a_read_only_target_is_refused_even_for_root(tmp_path, monkeypatch):
    target = tmp_path / "lb.md"
    target.write_text("old")
    monkeypatch.setattr(os, "access", lambda path, mode: path != target)
    with pytest.raises(OutputError, match="lb.md: cannot write: the file is read-only"):
        write_files({tmp_path / "lb.csv": "new", target: "new"})
    assert target.read_text() == "old" and not (tmp_path / "lb.csv").exists()


def test_run_refuses_an_unwritable_out_before_any_cell_trains(stored, capsys):
    (stored / "lb.md").mkdir()
    assert main(["run", "suite.yaml", "--store", "new.sqlite", "--out", "lb.md"]) == 2
    assert "lb.md: cannot write: a folder is in the way" in _one_line(capsys)
    assert not (stored / "new.sqlite").exists()


@pytest.mark.parametrize("out", ["pages", "pages/leaderboard.v2"])
def test_out_is_a_folder(out, stored, capsys):
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", out]) == 0
    assert capsys.readouterr().out == f"wrote {out}/small.md\n"
    assert {"small.md", "small.csv", "small.json"} <= {p.name for p in (stored / out).iterdir()}
    assert not (stored / "leaderboards").exists()


def test_run_publishes_into_the_out_folder(stored, capsys):
    assert main(["run", "suite.yaml", "--store", "db.sqlite", "--quiet", "--out", "pages"]) == 0
    assert capsys.readouterr().out.endswith("wrote pages/small.md\n")


def test_a_file_in_place_of_the_out_folder_is_one_line(stored, capsys):
    (stored / "pages").write_text("not a folder")
    before = _files(stored)
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", "pages"]) == 2
    assert _one_line(capsys).startswith("pages/small.md: cannot write")
    assert _files(stored) == before


def test_a_name_too_long_for_the_file_system_is_one_line(stored, capsys):
    name = "x" * 300 + ".md"
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", name]) == 2
    assert "cannot write: the file name has 303 bytes; the file system allows" in \
        _one_line(capsys)


def test_a_full_disk_writes_none_of_the_files(stored, capsys, monkeypatch):
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", "lb.md"]) == 0
    capsys.readouterr()
    published = {p: p.read_bytes() for p in stored.glob("lb*")}
    assert len(published) >= 3  # markdown, CSV, a plot
    staged = []
    real = output._stage

    def fill_up(path, content):
        if len(staged) == 2:  # the third file finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device")
        staged.append(path)
        return real(path, content)

    monkeypatch.setattr(output, "_stage", fill_up)
    (stored / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)).replace(
        "NCCC accuracy", "accuracy (NCCC)"))  # the markdown would change
    assert main(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", "lb.md"]) == 2
    assert _one_line(capsys).endswith("cannot write: the disk is full")
    assert {p: p.read_bytes() for p in stored.glob("lb*")} == published
    assert not list(stored.glob(".geobench-*"))  # no temporary file left
