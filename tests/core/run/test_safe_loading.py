"""Pickles are loaded only from private paths; every torch.load passes weights_only=True."""

import ast
import os
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult, Status
from geobench.run.executors.slurm import result_path, run_and_save
from geobench.run.safeload import UnsafePathError, check_private
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite

ROOT = Path(__file__).resolve().parents[3]


def _complete(cell) -> CellResult:
    return CellResult(cell.id, Status.COMPLETE.value, finals={"loss.train": 0.5},
                      started=1.0, finished=2.0)


@pytest.fixture
def jobs(tmp_path):
    """A suite whose 4 cells have result files in ``jobs/``, written as array tasks do."""
    (tmp_path / "suite.yaml").write_text(small_suite())
    folder = tmp_path / "jobs"
    folder.mkdir(mode=0o700)
    cells = Study(load_suite(tmp_path / "suite.yaml"), registry()).cells
    for cell in cells:
        run_and_save(_complete, cell, str(folder))
    return tmp_path, cells


def _collect(tmp_path, capsys) -> tuple[int, str, int]:
    """Exit status, stderr and the number of cells stored by ``geobench collect``."""
    code = main(["collect", str(tmp_path / "suite.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--folder", str(tmp_path / "jobs")])
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        stored = con.execute("SELECT count(*) FROM cells").fetchone()[0]
    return code, capsys.readouterr().err, stored


def test_collect_loads_a_private_folder(jobs, capsys):
    tmp_path, cells = jobs
    assert _collect(tmp_path, capsys) == (0, "", len(cells))


def test_collect_refuses_a_world_writable_folder(jobs, capsys):
    tmp_path, _ = jobs
    (tmp_path / "jobs").chmod(0o777)
    code, err, stored = _collect(tmp_path, capsys)
    assert (code, stored) == (2, 0)
    assert err.count("\n") == 1 and "writable by group or others (mode 777)" in err


def test_collect_refuses_a_writable_result_file(jobs, capsys):
    tmp_path, cells = jobs
    result_path(tmp_path / "jobs", cells[-1].id).chmod(0o666)
    code, err, stored = _collect(tmp_path, capsys)
    assert (code, stored) == (2, 0)
    assert err.count("\n") == 1 and f"{cells[-1].id}.result.pkl" in err


def test_result_files_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        run_and_save(lambda cell: None, SimpleNamespace(id="x"), str(tmp_path))
    finally:
        os.umask(old)
    assert result_path(tmp_path, "x").stat().st_mode & 0o777 == 0o600


def test_a_path_of_another_user_is_refused(tmp_path):
    st = os.stat(tmp_path)
    fake = os.stat_result((0o40700, *st[1:4], os.getuid() + 1, *st[5:]))
    with pytest.raises(UnsafePathError, match="owned by uid"):
        check_private(tmp_path, fake)
    check_private(tmp_path, os.stat_result((0o40755, *st[1:4], os.getuid(), *st[5:])))


def _torch_loads(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(), str(path))
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.load"]


def test_every_torch_load_passes_weights_only_true():
    files = [p for d in ("geobench", "plugins", "benchmarks", "scripts", "tests")
             for p in (ROOT / d).rglob("*.py")]
    calls = [(path, call) for path in files for call in _torch_loads(path)]
    assert calls  # the scan sees the known calls
    unsafe = [f"{path.relative_to(ROOT)}:{call.lineno}" for path, call in calls
              if not any(k.arg == "weights_only" and isinstance(k.value, ast.Constant)
                         and k.value.value is True for k in call.keywords)]
    assert unsafe == []


def test_collect_reports_a_truncated_or_foreign_result_file_in_one_line(jobs, capsys):
    tmp_path, cells = jobs
    path = result_path(tmp_path / "jobs", cells[0].id)
    path.write_bytes(path.read_bytes()[:40])  # cut short
    code, err, stored = _collect(tmp_path, capsys)
    assert (code, stored) == (2, 0) and err.count("\n") == 1
    assert err.startswith(f"cannot load {path}: ")
    run_and_save(lambda cell: {"not": "a result"}, cells[0], str(tmp_path / "jobs"))
    code, err, stored = _collect(tmp_path, capsys)
    assert (code, stored) == (2, 0)
    assert err.strip() == f"{path}: not the result of cell {cells[0].id} (holds dict)"
