"""What each site page shows, worked out from the boards so the templates only lay it out:
page names, claim rows, verdict counts, a paper's statements across scales, the results
tables, and each claim's entries with its units and per-seed plots."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from markupsafe import Markup, escape

from geobench.claims.verdicts import NOT_IN_PROFILE
from geobench.site.boards import PROFILE_ORDER, Board
from geobench.site.papers import Papers, section_of
from geobench.site.seedplot import seed_plot

SEEDS = {"confirm": "confirmation seeds", "explore": "exploration seeds",
         "replicate": "replication seeds"}


def suite_page(board: Board) -> str:
    return f"suite-{board.stem}.html"


def claim_page(suite: str, claim_id: str) -> str:
    return f"claim-{suite}--{claim_id}.html"


def paper_page(paper: str) -> str:
    return f"paper-{paper}.html"


def section_id(source: str) -> str:
    """The anchor of the paper page's section that ``source`` cites."""
    return section_of(source).replace(" ", "-") or "no-source"


def status(claim: dict[str, Any]) -> str:
    """What a verdict is evidence of: pre-registered, post hoc, contrast, corollary, sanity check,
    degenerate (no test) or revised after publication."""
    if claim["kind"] == "sanity":
        return "sanity check"
    if claim["kind"] in ("contrast", "corollary"):
        return claim["kind"]
    if claim.get("degenerate"):
        return "degenerate"
    if claim.get("revised"):
        return "revised"
    return "post hoc" if claim["posthoc"] else "pre-registered"


def claim_rows(boards: list[Board]) -> list[dict[str, Any]]:
    """One row per claim of every page, on the seeds that decide it, by paper."""
    rows = []
    for board in sorted(boards, key=lambda b: (b.paper, b.sort_key())):
        section = board.decided
        for c in section["claims"] if section else []:
            rows.append({"paper": board.paper, "suite": board.suite,
                         "profile": board.profile, "board": board, "claim": c,
                         "status": status(c), "verdict": c["verdict"],
                         "page": claim_page(board.suite, c["id"])})
    return rows


def by_paper(boards: list[Board]) -> dict[str, list[Board]]:
    """The boards of each paper (papers by id, pages without a paper last)."""
    groups: dict[str, list[Board]] = {}
    for board in sorted(boards, key=lambda b: (b.record["paper"] is None, b.paper)):
        groups.setdefault(board.paper, []).append(board)
    return groups


def page_counts(board: Board) -> dict[str, Any]:
    """A page's pre-registered claims tested in its profile by raw and by Holm verdict (and
    how many have no cell in it), its post hoc claims and contrasts (as the page's summary
    line counts them), its sanity checks in the profile (passed, of how many), and the seeds
    that decide."""
    claims = board.decided["claims"] if board.decided else []
    pre = [c for c in claims if status(c) == "pre-registered"]
    counted = [c for c in pre if c["verdict"] != NOT_IN_PROFILE]
    checks = [c for c in claims if c["kind"] == "sanity" and c["verdict"] != NOT_IN_PROFILE]
    return {"n": len(counted), "absent": len(pre) - len(counted),
            "raw": Counter(c["verdict"] for c in counted),
            "holm": Counter(c["verdict_holm"] for c in counted),
            "posthoc": sum(status(c) == "post hoc" for c in claims),
            "contrasts": sum(c["kind"] == "contrast" for c in claims),
            "passed": sum(c["verdict"] == "holds" for c in checks), "checks": len(checks),
            "seeds": board.decided["seeds"] if board.decided else None}


def profiles_of(boards: list[Board]) -> list[str]:
    found = {b.profile for b in boards}
    return [p for p in PROFILE_ORDER if p in found] + sorted(found - set(PROFILE_ORDER))


def paper_view(boards: list[Board], papers: Papers) -> dict[str, Any]:
    """A paper's results (sections in docs/papers.md order) with every claim citing each:
    its suite, statement, status and its verdict at each profile run."""
    profiles = profiles_of(boards)
    entries: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for board in sorted(boards, key=Board.sort_key):
        for c in board.decided["claims"] if board.decided else []:
            section = section_of(c["source"]) or "(no source)"
            entry = entries.setdefault(section, {}).setdefault(
                (board.suite, c["id"]), {"suite": board.suite, "claim": c, "by_profile": {}})
            entry["by_profile"][board.profile] = c
    for found in entries.values():
        for entry in found.values():
            entry["across"] = across_scales(
                [c["verdict"] for c in entry["by_profile"].values()])
    known = [s for s in papers.sections if s in entries]
    order = known + sorted(set(entries) - set(known))
    return {"profiles": profiles,
            "sections": [(s, papers.sections.get(s, ""), list(entries[s].values()))
                         for s in order]}


def code_spans(text: str) -> Markup:
    """``text`` escaped, with its markdown code spans (```x```) as ``<code>x</code>``."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


def breakable(name: str) -> Markup:
    """``name`` escaped, free to wrap after each underscore (long claim ids in tables)."""
    return Markup(str(escape(name)).replace("_", "_<wbr>"))


def short_number(text: str) -> str:
    """A CSV number to 4 significant digits (other text as it is)."""
    x = _number(text)
    return text if x is None else f"{x:.4g}"


def across_scales(verdicts: list[str]) -> str:
    """``changes`` when two of a claim's verdicts at different scales decide it (holds or
    fails) differently, ``holds at every scale`` when it holds at two or more and at every
    scale tested (insufficient and absent scales aside), else empty."""
    tested = [v for v in verdicts if v in ("holds", "fails", "inconclusive")]
    decided = {v for v in tested if v != "inconclusive"}
    if len(decided) > 1:
        return "changes"
    return "holds at every scale" if len(tested) > 1 and set(tested) == {"holds"} else ""


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


VALUE_COLUMNS = ("table", "metric", "stat", "agg", "value", "ci95_half_width", "n",
                 "expected", "diverged", "shown")


def result_tables(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The results CSV as tables: per ``table`` title (one untitled table without), the row
    keys it uses down and one column per metric (with ``stat`` and ``agg`` where not last
    and mean), each cell as the page prints it (``shown``) with its value to sort by."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        grouped.setdefault(row.get("table", ""), []).append(row)
    tables = []
    for title, members in grouped.items():
        keys = [k for k in members[0] if k not in VALUE_COLUMNS
                and any(m[k] != "" for m in members)]
        columns: list[str] = []
        body: dict[tuple[str, ...], dict[str, tuple[str, float | str]]] = {}
        for row in members:
            column = row["metric"] + "".join(
                f" · {x}" for x, plain in ((row["stat"], "last"), (row["agg"], "mean"))
                if x != plain)
            if column not in columns:
                columns.append(column)
            value = _number(row["value"])
            body.setdefault(tuple(row[k] for k in keys), {})[column] = (
                row["shown"], "" if value is None else value)
        tables.append({"title": title, "keys": keys, "columns": columns, "rows": body})
    return tables


def _parts(claim: dict[str, Any], units: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A claim's parts and controls, each with its units (claims CSV rows) and plot."""
    named = [(str(i), f"part {i}", p) for i, p in enumerate(claim["parts"], 1)] \
        or [("1", "", claim)]
    named += [(f"c{k}", f"control {k}", p) for k, p in enumerate(claim["controls"], 1)]
    out = []
    for key, label, part in named:
        mine = [u for u in units if u["part"] == key]
        out.append({"label": label, "part": part, "units": mine,
                    "plot": seed_plot(mine, part["edge"])})
    return out


def claim_entries(boards: list[Board]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Per (suite, claim id), one entry per page that has the claim (smoke, mid, full):
    the board, the deciding section's claim with its parts, units and plots, and the
    claim on the exploration seeds where a page has both."""
    entries: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for board in sorted(boards, key=Board.sort_key):
        sections = board.record["claims"]
        for i, section in enumerate(sections):
            units = board.units[section["heading"]]
            for c in section["claims"]:
                key = (board.suite, c["id"])
                if i == 0:
                    entries.setdefault(key, []).append({
                        "board": board, "section": section, "claim": c, "status": status(c),
                        "parts": _parts(c, units.get(c["id"], [])), "explore": None})
                elif section["seeds"] == "explore":
                    entries[key][-1]["explore"] = c
    return entries
