"""A small published leaderboard with known values, and readers of the site's HTML
(html5lib, strict: a page that is not valid HTML raises)."""

from pathlib import Path

import html5lib

from geobench.claims.registration import claim_digests
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.report.leaderboard import render
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: tiny\npaper: P9\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.2]
seeds: 4
claims:
  - {id: paired, source: P9 Thm 1 (the step), statement: a larger step is more accurate,
     metric: nccc.accuracy, expect: "a > b", compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
  - {id: above, source: P9 Sec 2, statement: the small step clears 0.5,
     metric: nccc.accuracy, expect: "> 0.5", where: {optimizer.lr: 0.05}}
  - id: both
    source: P9 Sec 2
    statement: both steps clear 0.25
    metric: nccc.accuracy
    expect: "> 0.25"
    where: {optimizer.lr: 0.05}
    also:
      - {metric: nccc.accuracy, expect: "> 0.25", where: {optimizer.lr: 0.2}}
leaderboard:
  rows: [optimizer.lr]
  metrics: [{key: nccc.accuracy, label: accuracy}]
  plots: [nccc.accuracy]
"""
PAPERS = """# Papers\n\n**P9 — "A tiny paper"** (for tests).\n\n## P9 Thm 1\n\nSteps help.\n
## P9 Sec 2\n\nSmall steps still learn.\n"""


def accuracy(lr: float, seed: int) -> float:
    """The stored final accuracy: 0.8 + 0.01 seed at lr 0.2, 0.3 + 0.02 seed at lr 0.05."""
    return 0.8 + 0.01 * seed if lr == 0.2 else 0.3 + 0.02 * seed


def publish(root: Path) -> tuple[Path, Path]:
    """Suite, store and leaderboard (``root/leaderboards/tiny.md``) of ``SUITE``; returns
    (the leaderboards folder, the store)."""
    (root / "suites").mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "papers.md").write_text(PAPERS)
    path = root / "suites" / "tiny.yaml"
    path.write_text(SUITE)
    loaded = load_suite(path)
    cells = Study(loaded, registry()).cells
    store = Store(root / "db.sqlite")
    digests = claim_digests(loaded.suite)
    for cell in cells:
        value = accuracy(cell.varied["optimizer.lr"], cell.trial_seed)
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": value},
                                     series=[("main", "nccc.accuracy", 0, 0.1),
                                             ("main", "nccc.accuracy", 30, value)],
                                     claims=digests), {"git_sha": "abc", "torch": "2.x"})
    render(Study(loaded, registry()), store, root / "leaderboards" / "tiny.md")
    store.close()
    return root / "leaderboards", root / "db.sqlite"


def parse(path: Path):
    """The page as an element tree; raises on any HTML parse error."""
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(path.read_bytes())


def text(element) -> str:
    return " ".join("".join(element.itertext()).split())


def table_rows(tree, selector: str) -> list[list[str]]:
    """The body rows' cell texts of the tables whose class contains ``selector``."""
    rows = []
    for table in tree.iter("table"):
        if selector in (table.get("class") or "").split():
            rows += [[text(td) for td in tr.findall("td")]
                     for tr in table.find("tbody").findall("tr")]
    return rows
