"""``geobench verify``: a page checked from its published files alone — verified as
published, and each tampered copy refused at its first inconsistency (file, line, claim)."""

import csv
import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from geobench.audit.page import check_verdicts, page_records
from geobench.cli import main
from tests.core.claims.test_registration import SUITE

BOARDS = Path(__file__).resolve().parents[3] / "leaderboards"


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """A folder with suites/r.yaml, its registration and its page in board/, published from
    a run under that registration."""
    root = tmp_path_factory.mktemp("published")
    (root / "suites").mkdir()
    suite, store = root / "suites" / "r.yaml", root / "db.sqlite"
    suite.write_text(SUITE)
    assert main(["register", str(suite), "--store", str(store)]) == 0
    assert main(["run", str(suite), "--store", str(store), "--quiet", "--out",
                 str(root / "board")]) == 0
    return root


@pytest.fixture
def copy(published, tmp_path) -> Path:
    """A copy of the published folder to tamper with."""
    shutil.copytree(published, tmp_path / "copy")
    return tmp_path / "copy"


def _verify(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def _rehash(board: Path, name: str) -> None:
    """Give the record the sha256 of ``name`` as it is now (a tamperer's second step)."""
    record = json.loads((board / "reg.json").read_text())
    record["sha256"][name] = hashlib.sha256((board / name).read_bytes()).hexdigest()
    (board / "reg.json").write_text(json.dumps(record))


def _cells(board: Path) -> tuple[Path, list[dict]]:
    """The page's cells CSV and its rows."""
    path = board / "reg_cells.csv"
    return path, list(csv.DictReader(path.open()))


def _rewrite(board: Path, path: Path, rows: list[dict]) -> None:
    """Write ``rows`` over the CSV at ``path`` and rehash it in the record."""
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    _rehash(board, path.name)


def test_a_published_page_verifies(published, capsys):
    board = published / "board"
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 0, out
    assert out == (f"{board / 'reg.md'}: verified: 8 files hashed, 6 unit values rebuilt, "
                   "2 claims recomputed; registration ../registrations/reg_smoke.json (3 "
                   "deciding cells ran under it)\n")
    assert _verify(capsys, "--all", str(board))[0] == 0


def test_verify_loads_no_plugin_and_imports_no_torch(published):
    board = published / "board"
    script = ("import sys, json; from geobench.cli import main; code = main(['verify', "
              f"{str(board / 'reg.json')!r}]); print(json.dumps([code, 'torch' in sys.modules, "
              "sorted(m for m in sys.modules if m.startswith(('geobench_', 'timm')))]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=published)
    assert json.loads(done.stdout.splitlines()[-1]) == [0, False, []], done.stderr


def test_a_value_changed_in_the_values_file_is_found(copy, capsys):
    board = copy / "board"
    path = board / "reg_values.csv.gz"
    rows = list(csv.DictReader(io.StringIO(gzip.decompress(path.read_bytes()).decode())))
    units = list(csv.DictReader((board / "reg_claims.csv").open()))
    target = next(r for r in rows if r["cell"] == units[0]["cell"]
                  and f"{r['metric']}.{r['field']}" == units[0]["metric"])
    target["value"] = repr(float(target["value"]) + 0.125)
    text = io.StringIO()
    writer = csv.DictWriter(text, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_bytes(gzip.compress(text.getvalue().encode(), mtime=0))
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and "reg_values.csv.gz: its sha256 is not the record's" in out
    _rehash(board, "reg_values.csv.gz")
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and f"INCONSISTENT: reg_claims.csv:2: claim above part 1 seed " \
        f"{units[0]['trial_seed']} cell {units[0]['cell']}: a = {units[0]['a']}, stored" in out


def test_a_claim_edited_after_its_registration_is_found(copy, capsys):
    board, registered = copy / "board", copy / "registrations" / "reg_smoke.json"
    record = json.loads(registered.read_text())
    claim = record["claims"][0]
    claim["definition"]["expect"] = "> 0.05"  # the registration rewritten after the data
    registered.write_text(json.dumps(record))
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and "reg_smoke.json: its sha256 is not the record's" in out
    page = json.loads((board / "reg.json").read_text())  # the tamperer rehashes it
    page["registration"]["sha256"] = hashlib.sha256(registered.read_bytes()).hexdigest()
    (board / "reg.json").write_text(json.dumps(page))
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and "reg_smoke.json: claim above: its registered digest is not that of " \
        "its registered definition" in out
    text = json.dumps(claim["definition"], sort_keys=True, separators=(",", ":"))
    claim["digest"] = hashlib.sha256(text.encode()).hexdigest()[:16]  # and its digest
    registered.write_text(json.dumps(record))
    page["registration"]["sha256"] = hashlib.sha256(registered.read_bytes()).hexdigest()
    (board / "reg.json").write_text(json.dumps(page))
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and re.search(r"INCONSISTENT: reg_cells.csv:\d+: claim above: cell \w{16} "
                                   "ran under another registration or none, yet the claim "
                                   "counts as pre-registered", out)


def test_a_claim_run_under_another_definition_yet_counted_is_found(copy, capsys):
    board = copy / "board"
    path, rows = _cells(board)
    for row in rows:  # as if the claim was edited after its registration, then ran
        row["claims"] = json.dumps({"above": "0123456789abcdef"})
    _rewrite(board, path, rows)
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and re.search(r"INCONSISTENT: reg_cells.csv:\d+: claim above: cell \w{16} "
                                   "ran under digest 0123456789abcdef, not the registered ", out)


def test_a_deciding_cell_dated_before_its_registration_is_found(copy, capsys):
    board = copy / "board"
    path, rows = _cells(board)
    seeds = [r["trial_seed"] for r in rows]
    rows[seeds.index("101")]["started"] = "2000-01-01T00:00:00+00:00"
    _rewrite(board, path, rows)
    code, out = _verify(capsys, str(board / "reg.md"))
    line = seeds.index("101") + 2
    assert code == 1 and f"reg_cells.csv:{line}: claim above: cell " in out
    assert "started 2000-01-01T00:00:00+00:00, before its registration (" in out


def test_a_record_without_hashes_and_a_missing_page(copy, capsys, tmp_path):
    board = copy / "board"
    record = json.loads((board / "reg.json").read_text())
    del record["sha256"]
    (board / "reg.json").write_text(json.dumps(record))
    code, out = _verify(capsys, "--all", str(board))
    assert code == 1 and "reg.json: the record lists no sha256 of its files" in out
    code, out = _verify(capsys, str(tmp_path / "nowhere.md"))
    assert code == 2 and out == f"{tmp_path / 'nowhere.json'}: no page record there\n"
    code, out = _verify(capsys, "--all", str(tmp_path / "empty"))
    assert code == 2 and out == f"{tmp_path / 'empty'}: no folder of pages (PAGE.md beside " \
        "PAGE.json)\n"


@pytest.mark.parametrize("record", page_records(BOARDS), ids=lambda p: p.stem)
def test_every_published_verdict_recomputes_from_its_units(record):
    """The shipped pages' records against the recomputation from their units alone (their
    records predate the sha256 that ``verify`` needs first, and the verdict rules: 1)."""
    page = json.loads(record.read_text())
    for section in page["claims"]:
        assert check_verdicts(section, BOARDS / section["units"], page.get("rules", 1)) \
            == len(section["claims"])


def test_a_page_without_the_cells_its_claims_read_is_found(copy, capsys):
    board = copy / "board"
    path = board / "reg_cells.csv"
    path.write_text(path.read_text().splitlines()[0] + "\n")  # the header alone
    _rehash(board, "reg_cells.csv")
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and re.search(r"reg_cells.csv: claim above: has no row of cell \w{16}, "
                                   "which the claim's units read", out)


def test_a_changed_page_or_an_unreadable_file_is_found_in_one_line(copy, capsys):
    board = copy / "board"
    page = board / "reg.md"
    page.write_text(page.read_text().replace("| holds", "| fails"))
    code, out = _verify(capsys, str(page))
    assert code == 1 and "reg.md: its sha256 is not the record's" in out
    (board / "reg_values.csv.gz").write_bytes(b"not gzip")
    _rehash(board, "reg_values.csv.gz")
    _rehash(board, "reg.md")
    code, out = _verify(capsys, "--all", str(board))
    assert code == 1 and len(out.splitlines()) == 1
    assert "INCONSISTENT: reg.json: cannot be read as a published page (BadGzipFile" in out


def test_a_page_decided_under_other_verdict_rules_is_found(copy, capsys):
    board = copy / "board"
    record = json.loads((board / "reg.json").read_text())
    assert record["rules"] == 2
    del record["rules"]  # as a page published before the rules were numbered
    (board / "reg.json").write_text(json.dumps(record))
    code, out = _verify(capsys, str(board / "reg.md"))
    assert code == 1 and out.strip() == (
        f"{board / 'reg.md'}: INCONSISTENT: reg.json: decided under verdict rules 1, not this "
        "version's 2 "
        "(docs/claims.md, \"Verdict rules\"): republish the page")
