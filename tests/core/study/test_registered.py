"""Registrations: ``geobench register`` freezes a profile's claims in a committed file before
its confirmation seeds run; a run records the registration in force with each cell; claims
not decided under it are post hoc; the page names it and carries the sha256 of its files and
what each cell ran under."""

import csv
import datetime as dt
import hashlib
import json
import time

from geobench.cli import main
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.study.registered import (
    CHANGED,
    NOT_REGISTERED,
    OUTSIDE,
    SEEDS,
    registration_path,
    registration_record,
)
from geobench.suite import load_suite
from tests.core.claims.test_registration import LOSS, SUITE


def _paths(tmp_path):
    suite = tmp_path / "suites" / "r.yaml"
    suite.parent.mkdir(exist_ok=True)
    return suite, tmp_path / "db.sqlite", tmp_path / "registrations" / "reg_smoke.json"


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _claims(capsys, suite, store, *flags: str) -> dict[str, dict]:
    code, out, _ = _cli(capsys, "claims", str(suite), "--store", str(store), "--json", *flags)
    assert code == 0
    return {c["id"]: c for c in map(json.loads, out.splitlines())}


def _run(capsys, suite, store, *flags: str) -> str:
    code, _, err = _cli(capsys, "run", str(suite), "--store", str(store), "--quiet",
                        "--no-leaderboard", *flags)
    assert code == 0, err
    return err


def test_register_freezes_each_claim_definition_and_the_confirmation_seeds(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE + LOSS)
    before = time.time()
    code, out, _ = _cli(capsys, "register", str(suite), "--store", str(store))
    assert code == 0 and f"wrote {registered}" in out
    record = json.loads(registered.read_text())
    assert (record["suite"], record["profile"], record["confirm"]) == ("reg", "smoke",
                                                                      [100, 101, 102])
    assert [c["id"] for c in record["claims"]] == ["above", "loss"]
    for claim in record["claims"]:  # the digest is sha256 of the definition as written there
        text = json.dumps(claim["definition"], sort_keys=True, separators=(",", ":"))
        assert claim["digest"] == hashlib.sha256(text.encode()).hexdigest()[:16]
        assert "statement" not in claim["definition"] and claim["statement"] == "s"
    assert record["claims"][0]["definition"]["expect"] == "> 0.1"
    assert {p["name"] for p in record["plugins"]} >= {"core", "toy"}
    when = dt.datetime.fromisoformat(record["registered"]).timestamp()
    assert before - 1 <= when <= time.time() + 1

    written = registered.read_bytes()  # the same claims again: the file stays as it was
    code, out, _ = _cli(capsys, "register", str(suite), "--store", str(store))
    assert code == 0 and "registered already" in out and registered.read_bytes() == written


def test_register_refuses_once_confirmation_cells_are_stored(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    _run(capsys, suite, store, "--seeds", "confirm")
    code, out, err = _cli(capsys, "register", str(suite), "--store", str(store))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "3 of its 3 confirmation cells are stored" in err and str(store) in err
    assert not registered.exists()

    suite.write_text(SUITE.replace("confirm: [100, 101, 102]\n", ""))
    code, _, err = _cli(capsys, "register", str(suite), "--store", str(store))
    assert code == 2 and "declares no confirmation seeds" in err and not registered.exists()


def test_claims_changed_or_added_after_the_registration_are_post_hoc(tmp_path, capsys):
    suite, store, _ = _paths(tmp_path)
    suite.write_text(SUITE)
    assert _cli(capsys, "register", str(suite), "--store", str(store))[0] == 0
    suite.write_text(SUITE.replace('"> 0.1"', '"> 0.05"') + LOSS)  # edited before any run
    err = _run(capsys, suite, store)
    assert "differ from their registration" in err
    got = _claims(capsys, suite, store)
    assert (got["above"]["posthoc"], got["loss"]["posthoc"]) == (CHANGED, NOT_REGISTERED)
    assert got["above"]["verdict_holm"] is None
    explore = _claims(capsys, suite, store, "--seeds", "explore")  # no registration there
    assert (explore["above"]["posthoc"], explore["loss"]["posthoc"]) == (None, None)


def test_claims_read_cells_that_ran_outside_the_registration_are_post_hoc(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    _run(capsys, suite, store)  # every cell, before any registration
    loaded = load_suite(suite)
    record = registration_record(loaded, "smoke", Study(loaded, _registry()).cells, None,
                                 time.time())  # as if made elsewhere, after the cells
    registered.parent.mkdir()
    registered.write_text(json.dumps(record))
    assert _claims(capsys, suite, store)["above"]["posthoc"] == OUTSIDE


def test_a_run_under_the_registration_decides_pre_registered(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    assert _cli(capsys, "register", str(suite), "--store", str(store))[0] == 0
    _run(capsys, suite, store)
    got = _claims(capsys, suite, store)["above"]
    assert (got["posthoc"], got["verdict_holm"]) == (None, "holds")


def test_the_page_names_its_registration_and_the_sha256_of_its_files(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    assert _cli(capsys, "register", str(suite), "--store", str(store))[0] == 0
    _run(capsys, suite, store)
    board = tmp_path / "board"
    assert _cli(capsys, "leaderboard", str(suite), "--store", str(store), "--out",
                str(board))[0] == 0
    sha = hashlib.sha256(registered.read_bytes()).hexdigest()
    page = (board / "reg.md").read_text()
    assert "registered in `../registrations/reg_smoke.json` on " in page
    assert f"(sha256 `{sha[:12]}`)" in page and "[reg_cells.csv](reg_cells.csv)" in page
    record = json.loads((board / "reg.json").read_text())
    assert record["registration"]["sha256"] == sha
    assert record["registration"]["file"] == "../registrations/reg_smoke.json"
    assert set(record["sha256"]) == set(record["files"]) - {"reg.json"}
    assert {"reg.md", "reg_cells.csv", "reg_claims.csv", "reg_values.csv.gz"} <= \
        set(record["files"]) and record["cells_file"] == "reg_cells.csv"
    for name, digest in record["sha256"].items():
        assert hashlib.sha256((board / name).read_bytes()).hexdigest() == digest, name

    loaded = load_suite(suite)
    cells = Study(loaded, _registry()).cells
    db = Store(store, read_only=True)
    stored = db.cells([c.id for c in cells])
    db.close()
    rows = list(csv.DictReader((board / "reg_cells.csv").open()))
    assert [r["cell"] for r in rows] == [c.id for c in cells]
    for row in rows:
        prov = stored[row["cell"]]["provenance"]
        assert json.loads(row["claims"]) == prov["claims"]
        assert row["registration"] == sha
        assert row["code"].split("-")[0] == (prov["git_sha"] or "")
        started, finished = (dt.datetime.fromisoformat(row[k]) for k in ("started", "finished"))
        assert started <= finished
        assert abs(finished.timestamp() - stored[row["cell"]]["finished"]) < 1


def test_a_rerun_keeps_the_registration_of_a_cells_first_record(tmp_path):
    suite, store, _ = _paths(tmp_path)
    suite.write_text(SUITE)
    cell = Study(load_suite(suite), _registry()).cells[0]
    db = Store(store)

    def write(status: str, registration: str) -> str | None:
        db.write(cell, CellResult(cell.id, status, registration=registration), {})
        return db.cells([cell.id])[cell.id]["provenance"].get("registration")

    assert write("failed", "a") == "a"
    assert write("complete", "b") == "b"  # a failure left nothing to see
    assert write("complete", "c") == "b"
    db.close()


def test_a_registration_of_another_suite_is_refused_in_one_line(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    registered.parent.mkdir()
    registered.write_text(json.dumps({"format": 1, "suite": "other", "profile": "smoke",
                                      "confirm": [], "claims": []}))
    code, _, err = _cli(capsys, "run", str(suite), "--store", str(store), "--quiet")
    assert code == 2 and len(err.splitlines()) == 1 and not store.exists()
    assert err.startswith(f"{registered}: not a registration of suite 'reg', profile 'smoke'")
    assert registration_path(load_suite(suite), "smoke") == registered
    elsewhere = tmp_path / "mine" / "r.yaml"  # a suite in no suites/ folder: beside it
    elsewhere.parent.mkdir()
    elsewhere.write_text(SUITE)
    assert registration_path(load_suite(elsewhere), "smoke") == \
        tmp_path / "mine" / "registrations" / "reg_smoke.json"


def _registry():
    from geobench.contract.manager import registry

    return registry()


def test_confirmation_seeds_changed_after_the_registration_make_every_claim_post_hoc(
        tmp_path, capsys):
    suite, store, _ = _paths(tmp_path)
    suite.write_text(SUITE)
    assert _cli(capsys, "register", str(suite), "--store", str(store))[0] == 0
    suite.write_text(SUITE.replace("[100, 101, 102]", "[200, 201, 202]"))  # seeds picked late
    assert "differ from their registration" in _run(capsys, suite, store)
    assert _claims(capsys, suite, store)["above"]["posthoc"] == SEEDS


def test_the_registration_is_found_from_any_working_folder(tmp_path, monkeypatch):
    suite, _, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    monkeypatch.chdir(suite.parent)
    assert registration_path(load_suite("r.yaml"), "smoke").resolve() == registered
    monkeypatch.chdir(tmp_path)
    assert registration_path(load_suite("suites/r.yaml"), "smoke") == \
        registered.relative_to(tmp_path)


def test_register_keeps_its_registration_and_replaces_it_only_when_told(tmp_path, capsys):
    suite, store, registered = _paths(tmp_path)
    suite.write_text(SUITE)
    assert _cli(capsys, "register", str(suite), "--store", str(store))[0] == 0
    _run(capsys, suite, store)
    code, out, _ = _cli(capsys, "register", str(suite), "--store", str(store))
    assert code == 0 and "registered already" in out  # the same claims, after the run
    written = registered.read_bytes()
    suite.write_text(SUITE.replace('"> 0.1"', '"> 0.2"'))
    code, _, err = _cli(capsys, "register", str(suite), "--store", str(store))
    assert code == 2 and "registers other claims or confirmation seeds" in err
    code, _, err = _cli(capsys, "register", str(suite), "--store", str(store), "--replace")
    assert code == 2 and "3 of its 3 confirmation cells are stored" in err  # they ran
    assert registered.read_bytes() == written
