"""Verdicts revised after publication (docs/claims.md, "Revised verdicts"). A page's cells
CSV publishes each cell's values digest now and as the page first published it; a
republish reads the earlier write's, so a confirmation cell whose values changed since
(a rerun: ``--rerun``, ``--rerun-diverged``, a code change) is revised, the store keeps
both records (``run.revisions``), and every claim that reads such a cell is marked revised
beside the verdict it had before. The suite's ``revised:`` list records revisions made
before pages published their digests, shown under "Revised verdicts"."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from geobench.suite.schema import Suite


def published_digests(out: Path, earlier: dict[str, Any] | None) -> dict[str, str]:
    """Cell id -> its values' digest as the page ``out`` first published them, from its
    earlier write's cells CSV (its ``published``, else ``values``); empty without one."""
    name = (earlier or {}).get("cells_file")
    path = out.with_name(name) if isinstance(name, str) else None
    if path is None or not path.is_file():
        return {}
    with path.open(newline="") as fh:
        return {row["cell"]: row.get("published") or row.get("values") or ""
                for row in csv.DictReader(fh) if row.get("published") or row.get("values")}


def verdicts_before(earlier: dict[str, Any] | None) -> dict[str, str]:
    """Claim id -> its verdict as the earlier write of the page first published it (its
    ``revised_from`` where it was revised already), on the confirmation seeds."""
    section = next((s for s in (earlier or {}).get("claims", []) if s.get("seeds") == "confirm"),
                   None)
    return {} if section is None else {
        c["id"]: c.get("revised_from") or c["verdict"] for c in section["claims"]}


def revised_section(suite: Suite, stem: str) -> str:
    """The "Revised verdicts" section of the page ``stem``: the suite's recorded revisions
    of it (empty without)."""
    rows = [r for r in suite.revised if r.page == stem]
    if not rows:
        return ""
    lines = [f"- `{r.id}`: {r.before} → {r.after} ({r.reason}; {r.commit})" for r in rows]
    return ("## Revised verdicts\n\nVerdicts this page published and a later rerun of its "
            "confirmation cells changed, recorded in the suite (docs/claims.md, \"Revised "
            "verdicts\"):\n\n" + "\n".join(lines) + "\n\n")
