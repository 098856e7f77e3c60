"""A real run killed part-way resumes to exactly the missing cells."""

import re
import signal
import sqlite3
import time

from tests.conftest import run_cli, start_cli
from tests.core.suite_text import small_suite

STEPS = 60
LRS = (0.02, 0.05, 0.1, 0.2)  # x 2 seeds = 8 cells


def _complete(db) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=30) as con:
            return con.execute("SELECT count(*) FROM cells").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _site(tmp_path):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    return site


def _run(tmp_path, *extra):
    return start_cli(["run", "suite.yaml", "--store", "db.sqlite", "--no-leaderboard",
                      "--quiet", *extra], tmp_path, _site(tmp_path), toy=True)


def _kill_after(proc, db, cells: int, sig) -> None:
    deadline = time.time() + 300
    while _complete(db) < cells and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    proc.communicate(timeout=60)


def _counts(db):
    with sqlite3.connect(db) as con:
        cells = con.execute("SELECT count(*), count(DISTINCT id) FROM cells").fetchone()
        dup = con.execute("SELECT count(*) FROM (SELECT cell, arm, metric, step, count(*) c "
                          "FROM series GROUP BY 1,2,3,4 HAVING c > 1)").fetchone()[0]
        per_cell = con.execute("SELECT count(*) FROM series GROUP BY cell").fetchall()
        finals = con.execute("SELECT count(*) FROM finals GROUP BY cell").fetchall()
    return cells, dup, {r[0] for r in per_cell}, {r[0] for r in finals}


def test_killed_run_resumes_exactly_the_missing_cells(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=STEPS, lrs=LRS))
    db = tmp_path / "db.sqlite"
    _kill_after(_run(tmp_path), db, 2, signal.SIGKILL)
    first = _complete(db)
    assert 2 <= first < 8
    _kill_after(_run(tmp_path), db, first + 1, signal.SIGINT)  # Ctrl-C
    second = _complete(db)
    assert first < second

    out = _run(tmp_path)
    stdout, stderr = out.communicate(timeout=600)
    assert out.returncode == 0, stderr
    assert (f"8 cells: {second} already stored, {8 - second} run ({8 - second} complete, "
            "0 diverged, 0 failed)") in stdout
    (cells, distinct), dup, per_cell, finals = _counts(db)
    assert cells == distinct == 8 and dup == 0
    assert len(per_cell) == 1 and len(finals) == 1  # every cell whole, none half-written

    lb = run_cli(["leaderboard", "suite.yaml", "--store", "db.sqlite", "--out", "lb.md"],
                 tmp_path, _site(tmp_path), timeout=300, toy=True)
    assert lb.returncode == 0, lb.stderr
    text = (tmp_path / "lb.md").read_text()
    assert "- cells: 8 (8 complete)" in text
    table = [line for line in text.split("| column")[0].splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(LRS)  # header, rule, one row per learning rate
    assert not any(re.search(r"\(n=\d+/", line) or "—" in line or "†" in line
                   for line in table)  # every seed of every row present
