"""The results API (geobench.report.results) on a real store: rows, DataFrames, CSV, errors."""

import csv
import gzip
import io
import json
import math
import sqlite3
import sys

import pandas as pd
import pytest

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import Cell, CellResult, Status, parse_metric_key
from geobench.report.results import (
    load_results,
    load_series,
    missing_rows,
    result_rows,
    series_rows,
    values_csv_gz,
    write_csv,
)
from geobench.run.store import Store, StoreError
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite

TWO_ARMS = """\
name: pair
base:
  data: {name: toy_mixture, num_classes: 3, dim: 8, n_train: 48, n_test: 24,
         batch_size: 16, reference_size: 16}
  augment: {name: toy_noise, sigma: 0.3}
  backbone: {name: toy_mlp, depth: 2, width: 8}
  head: {name: identity}
  objective: {name: toy_nt_xent}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 4, device: cpu}
  metrics:
    - {name: toy_cka, every: 2}
    - {name: nccc, every: 2}
arms:
  cl: {objective: {name: toy_nt_xent, tau: 0.5}}
  nscl: {objective: {name: toy_ce}}
grid:
  optimizer.lr: [0.05, 0.1, 0.2]
seeds: 2
profiles:
  wide: {base: {backbone: {width: 12}}}
"""
FIXED = {"cell", "suite", "profile", "trial_seed", "status", "arm", "metric", "field", "step",
         "value"}
# a hand-written cell whose record has keys named like fixed columns, a list and an empty dict
HAND = Cell(id="hand0", suite="hand", profile="smoke", trial_seed=0, varied={},
            arms={"main": {"status": "odd", "step": 3, "opt": {"lr": 0.1, "betas": [0.9, 0.99]},
                           "tags": {}}})


def _cells(path, profile):
    return Study(load_suite(path), registry(), profile).cells


def _result(cell_id, status, finals=None, series=None):
    return CellResult(cell_id, str(status), error="boom" if status == Status.FAILED else None,
                      finals=finals or {}, series=series or [], started=1.0, finished=2.0)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A store holding: pair/smoke 4 run, 1 failed, 1 missing; pair/wide 1 run, 1 diverged
    with NaN values, 4 missing; small/smoke 2 run (single arm); the hand-written cell."""
    root = tmp_path_factory.mktemp("results")
    pair, small, db = root / "pair.yaml", root / "small.yaml", root / "db.sqlite"
    pair.write_text(TWO_ARMS)
    small.write_text(small_suite(steps=4, lrs=(0.1,)))
    run = ["--store", str(db), "--quiet", "--no-leaderboard"]
    assert main(["run", str(pair), *run, "--max-cells", "4"]) == 0
    assert main(["run", str(pair), *run, "--profile", "wide", "--max-cells", "1"]) == 0
    assert main(["run", str(small), *run]) == 0
    store = Store(db)
    try:
        todo = [c for c in _cells(pair, "smoke") if c.id not in store.done_ids([c.id])]
        store.write(todo[0], _result(todo[0].id, Status.FAILED), {})
        wide = [c for c in _cells(pair, "wide") if c.id not in store.done_ids([c.id])]
        nan = math.nan
        store.write(wide[0], _result(
            wide[0].id, Status.DIVERGED, {"cl/loss.train": nan, "cl~nscl/toy_cka.debiased": 0.5},
            [("cl", "loss.train", 0, 1.0), ("cl", "loss.train", 1, nan),
             ("cl~nscl", "toy_cka.debiased", 0, 1.0), ("cl~nscl", "toy_cka.debiased", 1, 0.5)]),
            {})
        store.write(HAND, _result(HAND.id, Status.COMPLETE, {"m.f": 2.0},
                                  [("main", "m.f", 0, 1.0), ("main", "m.f", 1, 2.0)]), {})
    finally:
        store.close()
    return {"pair": pair, "small": small, "db": db, "failed": todo[0].id, "missing": todo[1],
            "diverged": wide[0].id}


def flat(record, prefix=""):
    """An independent flattening: dotted keys, lists as JSON, fixed names as config.<name>."""
    out = {}
    for key, value in record.items():
        name = prefix + key
        if isinstance(value, dict):
            out.update(flat(value, name + "."))
        else:
            out[name if prefix or name not in FIXED else f"config.{name}"] = (
                json.dumps(value) if isinstance(value, list) else value)
    return out


def same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a)
                      and math.isnan(b))


def _config(row):
    return {k: v for k, v in row.items() if k not in FIXED and not _null(v)}


def _null(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@pytest.mark.parametrize("suite, profile", [("pair", "smoke"), ("pair", "wide"),
                                            ("small", "smoke")])
def test_load_results_matches_the_results_command(world, capsys, suite, profile):
    capsys.readouterr()
    assert main(["results", str(world[suite]), "--store", str(world["db"]), "--json",
                 "--profile", profile]) == 0
    objs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    df = load_results(world["db"], suite=world[suite].stem, profile=profile)
    assert {o["cell"] for o in objs if o["status"] != "missing"} == set(df["cell"])
    for obj in objs:
        rows = df[df["cell"] == obj["cell"]].to_dict("records")
        if obj["status"] == "missing":
            assert not rows
            continue
        assert rows and all(r["status"] == obj["status"] for r in rows)
        assert all(r["trial_seed"] == obj["trial_seed"] for r in rows)
        measured = {(r["arm"], r["metric"], r["field"]): r["value"] for r in rows
                    if not _null(r["arm"])}
        expected = {tuple(parse_metric_key(k)): v for k, v in obj["metrics"].items()}
        assert measured.keys() == expected.keys()
        assert all(same(measured[k], expected[k]) for k in expected)
        arms = {name: flat(rec) for name, rec in obj["config"]["arms"].items()}
        for row in rows:
            if _null(row["arm"]):  # no values: the config every arm shares
                assert len(rows) == 1 and math.isnan(row["value"])
                want = {k: v for k, v in arms[next(iter(arms))].items()
                        if all(k in a and a[k] == v for a in arms.values())}
            else:
                want = arms[row["arm"].rpartition("~")[2]]
            assert _config(row) == {k: v for k, v in want.items() if not _null(v)}
            assert set(want) <= set(df.columns)


def test_a_cross_arm_row_carries_the_measured_arms_config(world):
    rows = [r for r in result_rows(world["db"], suite="pair", profile="smoke")
            if r["arm"] == "cl~nscl"]
    assert rows and {r["objective.name"] for r in rows} == {"toy_ce"}
    assert {(r["metric"], r["field"]) for r in rows} == {
        ("toy_cka", "debiased"), ("toy_cka", "biased"), ("toy_cka", "similar")}
    assert {r["trial_seed"] for r in rows} == {0, 1}
    assert {r["optimizer.lr"] for r in rows} >= {0.05, 0.1}


def test_a_cell_without_values_gives_one_row_with_its_status(world):
    (row,) = result_rows(world["db"], cells=[world["failed"]])
    assert row["status"] == "failed" and math.isnan(row["value"])
    assert row["arm"] is row["metric"] is row["field"] is None
    assert row["optimizer.lr"] == 0.2 and "objective.name" not in row  # the arms differ there
    assert series_rows(world["db"], cells=[world["failed"]]) == []


def test_nan_is_read_back_as_nan(world):
    rows = {(r["arm"], r["metric"]): r["value"]
            for r in result_rows(world["db"], cells=[world["diverged"]])}
    assert math.isnan(rows[("cl", "loss")]) and rows[("cl~nscl", "toy_cka")] == 0.5
    steps = [(r["step"], r["value"]) for r in series_rows(world["db"], cells=[world["diverged"]])
             if r["arm"] == "cl"]
    assert steps[0] == (0, 1.0) and steps[1][0] == 1 and math.isnan(steps[1][1])


def test_config_columns_never_take_a_fixed_name(world):
    (row,) = result_rows(world["db"], suite="hand")
    assert list(row) == ["cell", "suite", "profile", "trial_seed", "status", "config.status",
                         "config.step", "opt.lr", "opt.betas", "arm", "metric", "field",
                         "value"]
    assert row["status"] == "complete" and row["config.status"] == "odd"
    assert row["opt.betas"] == "[0.9, 0.99]" and row["arm"] == "main"
    (point, last) = series_rows(world["db"], suite="hand")
    assert point["config.step"] == 3 and (point["step"], last["step"]) == (0, 1)


def test_load_series_matches_the_store_and_ends_at_the_final_values(world):
    series = load_series(world["db"])
    store = Store(world["db"])
    try:
        stored = store.series(list(load_results(world["db"])["cell"].unique()))
    finally:
        store.close()

    def key(row):
        return tuple("nan" if _null(v) else v for v in row)

    got = [(r["cell"], r["arm"], f"{r['metric']}.{r['field']}", r["step"], r["value"])
           for r in series.to_dict("records")]
    assert sorted(map(key, got)) == sorted(map(key, stored))
    keys = ["cell", "arm", "metric", "field"]
    last = series.loc[series.groupby(keys)["step"].idxmax()].set_index(keys)["value"]
    finals = load_results(world["db"]).dropna(subset=["arm"]).set_index(keys)["value"]
    assert sorted(last.index) == sorted(finals.index)
    assert all(same(value, finals[index]) for index, value in last.items())


def test_rows_are_filtered_and_ordered(world):
    db = world["db"]
    every = result_rows(db)
    assert {r["suite"] for r in every} == {"pair", "small", "hand"}
    assert {r["profile"] for r in result_rows(db, suite="pair")} == {"smoke", "wide"}
    wide = result_rows(db, suite="pair", profile="wide")
    assert wide and {(r["suite"], r["profile"]) for r in wide} == {("pair", "wide")}
    assert {r["arm"] for r in result_rows(db, suite="small")} == {"main"}
    assert result_rows(db, cells=[]) == [] and result_rows(db, suite="nope") == []
    assert load_results(db, suite="nope").columns[-4:].tolist() == ["arm", "metric", "field",
                                                                    "value"]
    order = [(r["suite"], r["profile"], r["trial_seed"], r["cell"], r["arm"] or "",
              r["metric"] or "", r["field"] or "") for r in every]
    assert order == sorted(order) and every == result_rows(db)
    df = load_results(db)
    assert df.columns[:5].tolist() == ["cell", "suite", "profile", "trial_seed", "status"]
    assert df.columns[-4:].tolist() == ["arm", "metric", "field", "value"]


def test_a_missing_store_is_an_error_and_is_not_created(tmp_path, capsys):
    """Also through ``geobench results --csv``: exit 2 with the one-line error."""
    path = tmp_path / "none" / "db.sqlite"
    with pytest.raises(StoreError, match="no such file") as info:
        result_rows(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert not path.exists() and not path.parent.exists()
    with pytest.raises(StoreError, match="not a file"):
        result_rows(tmp_path)
    (tmp_path / "s.yaml").write_text(small_suite(steps=5))
    assert main(["results", str(tmp_path / "s.yaml"), "--store", str(path), "--csv"]) == 2
    assert not path.parent.exists()
    err = capsys.readouterr().err.strip()
    assert str(path) in err and "no such file" in err and "\n" not in err
    with pytest.raises(SystemExit):
        main(["results", str(tmp_path / "s.yaml"), "--json", "--csv"])
    assert "not allowed with argument" in capsys.readouterr().err
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database at all" * 100)
    with pytest.raises(StoreError, match="not a SQLite database"):
        load_series(junk)


def test_without_pandas_the_error_names_the_extra(world, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    for load in (load_results, load_series):
        with pytest.raises(ImportError, match=r"pip install 'geobench\[pandas\]'"):
            load(world["db"])
    assert result_rows(world["db"], suite="hand")  # the plain rows need no pandas


def test_write_csv_round_trips_the_rows(world):
    rows = result_rows(world["db"]) + missing_rows([world["missing"]])
    out = io.StringIO()
    write_csv(rows, out)
    out.seek(0)
    back = list(csv.DictReader(out))
    assert len(back) == len(rows)
    for got, row in zip(back, rows):
        assert set(row) <= set(got)
        assert got == {k: "" if row.get(k) is None else str(row[k]) for k in got}
    assert back[-1]["status"] == "missing" and back[-1]["value"] == "nan"
    assert list(back[0])[-4:] == ["arm", "metric", "field", "value"]
    frame = pd.read_csv(io.StringIO(out.getvalue()))
    assert frame["value"].isna().sum() == sum(math.isnan(r["value"]) for r in rows)


def test_missing_rows_look_like_a_stored_cell_without_values(world):
    cell = world["missing"]
    (row,) = missing_rows([cell])
    assert row["status"] == "missing" and row["cell"] == cell.id and math.isnan(row["value"])
    assert row["optimizer.lr"] == cell.varied["optimizer.lr"] and row["arm"] is None


def test_the_series_csv_holds_every_stored_value_and_every_cell(world, capsys):
    """``geobench results --csv --series``: one row per series point as the store holds it
    (read here with sqlite3), then the failed cell without values and the missing one; the
    published ``values_csv_gz`` is the same text, gzip-compressed the same way every time."""
    cells = _cells(world["pair"], "smoke")
    capsys.readouterr()
    assert main(["results", str(world["pair"]), "--store", str(world["db"]), "--csv",
                 "--series"]) == 0
    text = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(text)))
    db = sqlite3.connect(world["db"])
    stored = db.execute("SELECT cell, arm, metric, step, value FROM series WHERE cell IN ({})"
                        .format(",".join("?" * len(cells))), [c.id for c in cells]).fetchall()
    db.close()
    points = [r for r in rows if r["step"]]
    assert sorted((r["cell"], r["arm"], f"{r['metric']}.{r['field']}", int(r["step"]),
                   float(r["value"])) for r in points) == sorted(stored)
    others = {r["cell"]: r["status"] for r in rows if not r["step"]}
    assert others == {world["failed"]: "failed", world["missing"].id: "missing"}
    published = values_csv_gz(world["db"], cells)
    assert gzip.decompress(published).decode() == text
    assert published == values_csv_gz(world["db"], cells)
    assert main(["results", str(world["pair"]), "--series"]) == 2
    assert "--series goes with --csv" in capsys.readouterr().err
