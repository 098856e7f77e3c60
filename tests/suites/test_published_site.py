"""The results site of the shipped leaderboards: every published page has its record, and
the index counts each page's claims as the page's own summary line does."""

import json
import re
from pathlib import Path

import pytest

from geobench.site.build import build_site
from tests.core.site.helpers import parse, table_rows

ROOT = Path(__file__).resolve().parents[2]
BOARDS = ROOT / "leaderboards"
PAGES = sorted(p for p in BOARDS.glob("*.md"))
COUNTS = re.compile(r"(\d+) (holds|fails|inconclusive|insufficient|not in this profile)")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(BOARDS, out, ROOT / "docs" / "papers.md")
    rows = table_rows(parse(out / "index.html"), "suites")
    return {(r[0], r[1]): r for r in rows}


def test_every_published_page_has_its_record():
    assert PAGES and [p.name for p in PAGES if not p.with_suffix(".json").is_file()] == []


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_the_index_counts_as_the_page_does(page, index):
    line = next(ln for ln in page.read_text().splitlines() if "**Pre-registered:" in ln)
    raw_text, holm_text = line.split("; Holm", 1)
    raw, holm = (dict((v, int(n)) for n, v in COUNTS.findall(t)) for t in (raw_text, holm_text))
    record = json.loads(page.with_suffix(".json").read_text())
    row = index[(record["suite"], record["profile"])]
    absent = raw.get("not in this profile", 0)
    assert row[4] == str(sum(raw.values()) - absent) + (
        f" (+{absent} not in this profile)" if absent else "")
    for i, verdict in enumerate(("holds", "fails", "inconclusive", "insufficient"), 5):
        assert row[i] == f"{raw[verdict]} / {holm[verdict]}", (page.stem, verdict)
    section = page.read_text().split("\n## ", 2)[1]  # the claims that decide
    checks = [ln.split("|")[-2].strip() for ln in section.splitlines()
              if ln.startswith("| `") and "Sanity checks:" in section
              and section.index(ln) > section.index("Sanity checks:")]
    run = [c for c in checks if c != "not in this profile"]
    assert row[11] == f"{run.count('pass')}/{len(run)}", page.stem
