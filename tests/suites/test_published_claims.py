"""Every claim published in leaderboards/ is recomputed from its `<suite>_claims.csv` alone
(geobench.audit.recompute: numpy and scipy, no other geobench code) and matches the printed
effect, interval, n, p-value, raw and Holm verdicts of the claims table; each unit's a and b
are the values published in `<suite>_values.csv.gz`; every published claims CSV has the
columns the current writer writes; the results tables of collapse and alignment stay within
30 rows and 10 columns."""

import csv
import json
import math
from pathlib import Path

import pytest

from geobench.claims.claims_table import UNIT_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
BOARDS = ROOT / "leaderboards"
PUBLISHED = sorted(BOARDS.glob("*_claims.csv"))


def test_every_shipped_suite_publishes_its_claims_units():
    """Each suite's smoke leaderboard and ``<suite>_mid`` for each suite with a mid profile;
    ``<suite>_full`` may be there for a suite with a full profile, and nothing else."""
    suites = {p.stem: p.read_text() for p in (ROOT / "suites").glob("*.yaml")}
    expected = set(suites) | {f"{s}_mid" for s, text in suites.items() if "\n  mid:\n" in text}
    full = {f"{s}_full" for s, text in suites.items() if "\n  full:\n" in text}
    published = {p.name.removesuffix("_claims.csv") for p in PUBLISHED}
    assert suites and expected <= published <= expected | full


def _claims_rows(markdown: str) -> dict[tuple[str, int | str], list[str]]:
    """The claims table's rows by (claim, part); a claim with parts also as (claim, 0), its
    controls as (claim, "c1"), ..."""
    section = markdown.split("## Claims\n\n", 1)[1]
    table = section[section.index("\n|") + 1:] if not section.startswith("|") else section
    lines = table.split("\n\n", 1)[0].splitlines()[2:]
    rows, claim = {}, None
    for line in lines:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if cells[0]:
            claim = cells[0].strip("`")
            part = 0 if cells[2].startswith("all ") else 1
        elif cells[2].startswith("control "):
            part = "c" + cells[2].split()[1].rstrip(".")
        else:
            part = int(cells[2].split(".", 1)[0])
        rows[(claim, part)] = cells
    return rows


def _checks_rows(markdown: str) -> dict[str, str]:
    """The sanity checks' results by claim id (the table under "Sanity checks:")."""
    if "\nSanity checks:" not in markdown:
        return {}
    block = markdown.split("\nSanity checks:", 1)[1].split("\n\n", 2)[1]
    return {cells[0].strip("`"): cells[-1] for cells in
            ([c.strip() for c in line.split("|")[1:-1]] for line in block.splitlines()[2:])}


def _rules(path: Path) -> int:
    """The verdict rules the page of the units CSV ``path`` was decided under (1 where its
    record predates them)."""
    record = path.with_name(path.name.replace("_claims.csv", ".json"))
    return json.loads(record.read_text()).get("rules", 1)


def _effect_text(r: dict, scale: str, threshold: float) -> str:
    if r["method"] == "rate":
        lo, hi = r["ci_low"] + threshold, r["ci_high"] + threshold
        return f"rate {r['effect'] + threshold:.2g} [{lo:.2g}, {hi:.2g}]"
    if scale == "log":
        e, lo, hi = (math.exp(r[k]) for k in ("effect", "ci_low", "ci_high"))
        return f"×{e:.3g} [×{lo:.3g}, ×{hi:.3g}]"
    return f"{r['effect']:+.3g} [{r['ci_low']:+.3g}, {r['ci_high']:+.3g}]"


def _p_text(p: float | None) -> str:
    return "—" if p is None else "<1e-4" if p < 1e-4 else f"{p:.2g}"


@pytest.mark.parametrize("path", PUBLISHED, ids=[p.stem for p in PUBLISHED])
def test_published_claims_recompute_from_their_units(path, recompute_claims):
    with path.open(newline="") as fh:
        units = list(csv.DictReader(fh))
    sanity = {u["claim"] for u in units if u["kind"] == "sanity"}  # listed under the table
    first = {(u["claim"], int(u["part"])): u for u in units if u["part"].isdigit()}
    recomputed = {k: r for k, r in recompute_claims.recompute_file(str(path)).items()
                  if k[0] not in sanity}
    suite = path.name.removesuffix("_claims.csv")
    markdown = (BOARDS / f"{suite}.md").read_text()
    table = _claims_rows(markdown)
    checks = _checks_rows(markdown)
    for key, r in recomputed.items():
        row = table[key]
        unit = first[key]
        threshold = 0.0 if "a" in unit["expect"] else float(unit["expect"].strip()[1:])
        if "§" not in row[6]:  # else the row is the claim's, gated by its control (below)
            assert row[6].strip("*†‡") == r["verdict"], key
        assert int(row[4].split()[0].rstrip(",")) == r["n"], key  # "0, 10 excluded"
        # fewer than 3 trial seeds, or no cell in this profile: no interval to check
        if r["verdict"] not in ("insufficient", "not in this profile"):
            scale = "linear" if unit.get("trend") else unit["scale"]  # a fitted slope
            assert row[3] == _effect_text(r, scale, threshold), key
            assert row[5] == _p_text(r["p_value"]), key
    assert set(recomputed) == {k for k in table if isinstance(k[1], int) and k[1] > 0}
    controls = recompute_claims.recompute_controls(str(path))
    assert set(controls) == {k for k in table if isinstance(k[1], str)}
    for key, r in controls.items():
        assert table[key][6] == ("fired" if r["verdict"] == "holds"
                                 else f"did not fire ({r['verdict']})"), key
    for claim, r in recompute_claims.recompute_claims(str(path), _rules(path)).items():
        if claim in sanity:
            result = {"holds": "pass", "fails": "FAIL"}.get(r["verdict"], r["verdict"])
            assert checks[claim] == result, claim
            continue
        row = table[(claim, 0)] if (claim, 0) in table else table[(claim, 1)]
        assert row[5] == _p_text(r["p_value"]), claim
        assert row[6].strip("*†‡§") == r["verdict"], claim
        outside = "— (contrast)" if "‡" in row[6] else "— (post hoc)"
        assert row[7] == (r["verdict_holm"] or outside), claim


def test_every_page_publishes_its_stored_values():
    assert [p.name for p in PUBLISHED
            if not p.with_name(p.name.replace("_claims.csv", "_values.csv.gz")).exists()] == []


@pytest.mark.parametrize("path", PUBLISHED, ids=[p.stem for p in PUBLISHED])
def test_published_claims_csvs_have_the_current_columns(path):
    with path.open(newline="") as fh:
        assert next(csv.reader(fh)) == UNIT_COLUMNS


@pytest.mark.parametrize("path", PUBLISHED, ids=[p.stem for p in PUBLISHED])
def test_published_units_are_the_published_stored_values(path, recompute_claims):
    values = path.with_name(path.name.replace("_claims.csv", "_values.csv.gz"))
    checked, trends, differ = recompute_claims.check_units(str(path), str(values))
    assert checked + trends > 0 and differ == []


@pytest.mark.parametrize("suite", ["collapse", "alignment"])
def test_results_tables_stay_small(suite):
    results = (BOARDS / f"{suite}.md").read_text().split("## Results", 1)[1]
    tables = [block for block in results.split("\n\n") if block.startswith("|")]
    assert tables
    for block in tables:
        lines = block.strip().splitlines()
        assert len(lines) - 2 <= 30, lines[0]
        assert lines[0].count("|") - 1 <= 10, lines[0]
