"""Every malformed suite gets one line naming the file, line and key: exit 2, no traceback,
nothing stored. The corpus is tests/core/hostile/*.yaml; each file's first line is
``# expect: <fragment of the error line>``."""

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.report.paths import leaderboard_path
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import MAX_BYTES, SuiteError
from tests.conftest import run_cli
from tests.core.suite_text import small_suite

HOSTILE = Path(__file__).parents[1] / "hostile"
CORPUS = sorted(HOSTILE.glob("*.yaml"))
WITHOUT_COMMENT = {"empty.yaml": "a suite is a YAML mapping"}  # a 0-byte file


def expected(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    return first.removeprefix("# expect: ") if first.startswith("# expect: ") \
        else WITHOUT_COMMENT[path.name]


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if not ln.startswith("warning: plugin")]


def check_refused(args: list[str], path: Path, fragment: str, store: Path, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{path}:") and fragment in lines[0], lines[0]
    assert "Traceback" not in err
    assert not store.exists()


def check_corpus_case(path: Path, command: str, tmp_path: Path, monkeypatch, capsys) -> None:
    """``command`` (validate or run) refuses the corpus file ``path`` as its first line says."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "db.sqlite"
    check_refused([command, str(path), "--store", str(store)] if command == "run"
                  else [command, str(path)], path, expected(path), store, capsys)


def test_the_corpus_is_large():
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_malformed_suite_gets_one_line(path, command, tmp_path, monkeypatch, capsys):
    check_corpus_case(path, command, tmp_path, monkeypatch, capsys)


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "huge.yaml"
    path.write_text(small_suite() + "#" * MAX_BYTES + "\n")
    check_refused(["run", str(path), "--store", "db.sqlite"], path, "a suite file is at most",
                  tmp_path / "db.sqlite", capsys)


@pytest.mark.parametrize("name", ["yaml_billion_laughs.yaml", "yaml_not_utf8.yaml"])
def test_the_entry_point_prints_no_traceback(name, tmp_path):
    out = run_cli(["run", str(HOSTILE / name), "--store", "db.sqlite"], tmp_path, timeout=60)
    lines = error_lines(out.stderr)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(lines) == 1 and expected(HOSTILE / name) in lines[0]
    assert not (tmp_path / "db.sqlite").exists()


def test_a_billion_cells_are_refused_before_any_is_built(tmp_path, capsys):
    grid = "".join(f"  tags.t{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" for i in range(9))
    path = tmp_path / "big.yaml"
    path.write_text(small_suite().replace("  optimizer.lr: [0.05, 0.1]\n", grid)
                    .replace("seeds: 2", "seeds: 1"))
    for command in ("validate", "show"):
        start = time.perf_counter()
        assert main([command, str(path)]) == 2
        assert time.perf_counter() - start < 2
        assert "expands to 1000000000 cells" in capsys.readouterr().err


def test_cell_limit_counts_seeds_and_can_be_raised(tmp_path, capsys):
    path = tmp_path / "many.yaml"
    path.write_text(small_suite(lrs=(0.1,)).replace("seeds: 2", "seeds: 10001"))
    assert main(["validate", str(path)]) == 2
    assert "expands to 10001 cells (10001 seeds); the limit is 10000" in capsys.readouterr().err
    assert main(["validate", str(path), "--cell-limit", "10001"]) == 0
    assert "10001 cells" in capsys.readouterr().out
    loaded = load_suite(path)
    with pytest.raises(SuiteError, match="the limit is 5000"):
        Study(loaded, registry(), cell_limit=5000)


def test_an_invalid_override_is_one_line(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(small_suite())
    assert main(["validate", str(path), "--set", "optimizer.momentum=.nan"]) == 2
    assert "--set optimizer.momentum: must be a finite number" in capsys.readouterr().err


def test_the_default_leaderboard_path_stays_in_the_store_folder(tmp_path):
    store = str(tmp_path / "db.sqlite")
    good = SimpleNamespace(path="s.yaml", suite=SimpleNamespace(name="ok"))
    assert leaderboard_path(good, "smoke", store) == tmp_path / "leaderboards" / "ok.md"
    assert leaderboard_path(good, "mid", store) == tmp_path / "leaderboards" / "ok_mid.md"
    evil = SimpleNamespace(path="s.yaml", suite=SimpleNamespace(name="../../etc/x"))
    with pytest.raises(SuiteError, match="leaves"):
        leaderboard_path(evil, "smoke", store)
