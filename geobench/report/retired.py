"""Retired claims on a page: a claim removed after it had a published verdict stays in its
suite's ``retired:`` list (id, statement, reason, the commit that removed it, the verdict it
last had on each page) and on the page under "Retired claims"; a page is not rewritten while
a claim with a verdict on it is neither a claim nor retired (docs/claims.md, "Retired
claims")."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from geobench.publish.markdown import markdown_table, md_cell
from geobench.publish.output import OutputError
from geobench.suite import LoadedSuite
from geobench.suite.schema import Suite


def retired_section(suite: Suite, page: str) -> str:
    """The markdown of the page ``page`` (its stem)'s "Retired claims", empty without any."""
    if not suite.retired:
        return ""
    rows = [[f"`{r.id}`", md_cell(r.statement), md_cell(r.reason), f"`{r.commit[:10]}`",
             md_cell(r.verdicts.get(page, "— (not on this page)"))] for r in suite.retired]
    return ("\n## Retired claims\n\nRemoved after a published verdict; kept with the verdict "
            "each last had here (outside every count and family).\n\n"
            + markdown_table(rows, ["claim", "statement", "why retired", "removed in",
                                    "last verdict here"]))


def retired_text(suite: Suite, width: int = 120) -> str:
    """The suite's retired claims for a terminal, one wrapped paragraph each (id, the commit
    that removed it, why, the verdict it last had on each page); empty without any."""
    if not suite.retired:
        return ""
    lines = ["", "Retired claims (removed after a published verdict; outside every count and "
                 "family):"]
    for r in suite.retired:
        last = "; ".join(f"{page}: {v}" for page, v in r.verdicts.items()) or "none recorded"
        lines.append(textwrap.fill(f"{r.id} (removed in {r.commit[:10]}): {r.reason}. Last "
                                   f"verdicts: {last}", width, subsequent_indent="  "))
    return "\n".join(lines) + "\n"


def retired_records(suite: Suite, page: str) -> list[dict[str, Any]]:
    """The retired claims as the page's record lists them."""
    return [{"id": r.id, "statement": r.statement, "reason": r.reason, "commit": r.commit,
             "verdict": r.verdicts.get(page)} for r in suite.retired]


def check_kept(out: Path, earlier: dict[str, Any] | None, loaded: LoadedSuite) -> None:
    """Refuse (``OutputError``, one line) to rewrite the page ``out`` while a claim with a
    verdict on its ``earlier`` record is neither a claim of the suite nor retired."""
    if earlier is None:
        return
    kept = {c.id for c in loaded.suite.claims} | {r.id for r in loaded.suite.retired}
    shown = [c["id"] for section in earlier.get("claims") or [] if isinstance(section, dict)
             for c in section.get("claims") or [] if isinstance(c, dict) and "id" in c]
    gone = next((cid for cid in shown if cid not in kept), None)
    if gone is not None:
        raise OutputError(f"{out}: claim {gone!r} has a published verdict there; keep it in "
                          f"{loaded.path}'s claims: or move it to retired: (id, statement, "
                          "reason, commit, verdicts)")
