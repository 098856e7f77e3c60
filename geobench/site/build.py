"""Build the results site: an index of every suite and profile by paper, a page per paper
(its results, the claims citing each, their verdicts at every scale), per published page
(claims, forest plot, results, figures, provenance), per claim (effect at each scale, every
unit, a per-seed plot) and one of every claim to filter and sort.  Pages are Jinja2
templates (``templates/``); the one script and style sheet (``static/``) ship with
geobench, so the site works from ``file://`` with no network."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geobench.claims.claims_table import OUTCOMES
from geobench.publish.output import OutputError
from geobench.site import views
from geobench.site.boards import Board, read_boards
from geobench.site.papers import read_papers

MARKER = ".geobench-site"  # a folder holding it was built by geobench site (safe to rebuild)
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Built:
    """What a build wrote: the folder and how many HTML pages."""

    out: Path
    pages: int


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("geobench.site", "templates"),
                             autoescape=jinja2.select_autoescape(["html"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.globals.update(claim_page=views.claim_page, suite_page=views.suite_page,
                       paper_page=views.paper_page, section_id=views.section_id,
                       verdicts=OUTCOMES, seeds_text=views.SEEDS)
    env.filters.update(fmt=views.short_number, code=views.code_spans, wrap=views.breakable)
    return env


def _prepare(out: Path) -> None:
    """Make ``out`` an empty site folder: new, or one an earlier build wrote (its marker);
    any other folder with files in it is refused, so nothing else is overwritten."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out}: a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise OutputError(f"--out {out}: a folder with files that geobench site did not "
                              "write; name a new or empty folder")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("built by geobench site; rebuilt in place\n")


def _files(boards: list[Board]) -> list[tuple[Path, str]]:
    """Every file the site copies, (source, path in the site): the plots into ``img/``, the
    CSVs into ``data/``; each must exist (checked before anything is written)."""
    files = []
    for board in boards:
        for name, folder in board.files():
            source = board.folder / name
            if not source.is_file():
                raise OutputError(f"{source}: missing (named by {board.stem}.json); publish "
                                  "the page again with geobench leaderboard")
            files.append((source, f"{folder}/{name}"))
    return files


def _copy(files: list[tuple[Path, str]], out: Path) -> None:
    """``files`` into ``out``, and the script and style into ``static/``."""
    for folder in ("img", "data"):
        (out / folder).mkdir()
    for source, target in files:
        shutil.copyfile(source, out / target)
    shutil.copytree(STATIC, out / "static")


def build_site(boards_folder: Path, out: Path, papers_md: Path | None = None) -> Built:
    """Build the site of the records in ``boards_folder`` into ``out`` (``papers_md``:
    docs/papers.md, for the papers' titles and results in words)."""
    boards = read_boards(boards_folder)
    papers = read_papers(papers_md)
    env = _environment()
    files = _files(boards)
    _prepare(out)
    _copy(files, out)
    pages: dict[str, str] = {}
    rows = views.claim_rows(boards)
    by_paper = views.by_paper(boards)
    common = {"papers": papers, "paper_ids": list(by_paper)}
    pages["index.html"] = env.get_template("index.html").render(
        **common, groups=by_paper, counts=views.page_counts, totals=Counter(
            r["verdict"] for r in rows if r["status"] == "pre-registered"), boards=boards)
    pages["claims.html"] = env.get_template("claims.html").render(
        **common, rows=rows, boards=boards)
    for paper, paper_boards in by_paper.items():
        pages[views.paper_page(paper)] = env.get_template("paper.html").render(
            **common, paper=paper, **views.paper_view(paper_boards, papers))
    for board in boards:
        pages[views.suite_page(board)] = env.get_template("suite.html").render(
            **common, board=board, results=views.result_tables(board.results),
            siblings=[b for b in boards if b.suite == board.suite])
    for (suite, claim_id), entries in views.claim_entries(boards).items():
        pages[views.claim_page(suite, claim_id)] = env.get_template("claim.html").render(
            **common, suite=suite, claim_id=claim_id, entries=entries)
    for name, html in pages.items():
        (out / name).write_text(html)
    return Built(out, len(pages))
