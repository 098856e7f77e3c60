"""Whether a claim's verdict is pre-registered: every stored cell the claim reads ran under
a suite that already held that exact claim definition.

``claim_digest`` is the definition's fingerprint: sha256 of the claim's canonical JSON
(sorted keys) without ``statement``, ``source``, ``posthoc``, ``per_suite`` and
``implied_by`` (its wording, its paper reference, the declared post hoc reason, why it is
quoted per suite and a corollary's premises do not change what is tested), 16 hex digits.
A run records the digest of every claim of its suite with each cell it stores
(``CellResult.claims``; a rerun keeps the first record).  A claim the suite does not mark
``posthoc`` is post hoc automatically, with the first reason that applies over its parts'
stored cells: ``definition changed after its data`` (a cell recorded another digest),
``declared after its data`` (a cell recorded the suite's claims without this one), or
``no record of the claims in force when its data ran`` (a cell stored without a record).
"""

from __future__ import annotations

import hashlib
import json

from geobench.claims.select import selected_cells
from geobench.claims.values import StoredValues
from geobench.records import Cell
from geobench.suite.schema import Claim, Suite

WORDING = {"statement", "source", "posthoc", "per_suite", "implied_by"}
CHANGED = "definition changed after its data"
AFTER = "declared after its data"
UNRECORDED = "no record of the claims in force when its data ran"


def claim_digest(claim: Claim) -> str:
    """The fingerprint of what ``claim`` tests (the module says which keys it covers)."""
    text = json.dumps(claim.model_dump(mode="json", exclude=WORDING), sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def claim_digests(suite: Suite) -> dict[str, str]:
    """Claim id -> digest, for every claim of ``suite``: what a run records with a cell."""
    return {c.id: claim_digest(c) for c in suite.claims}


def claims_digest(suite: Suite) -> str:
    """One fingerprint of all of ``suite``'s claim definitions (shown on a leaderboard)."""
    text = json.dumps(claim_digests(suite), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def seen_before(claim: Claim, cells: list[Cell], values: StoredValues) -> str | None:
    """Why ``claim``'s data were there before its definition (the module's reasons, the
    first that applies), or None when every stored cell a part or control reads ran under
    it."""
    digest = claim_digest(claim)
    records = [values.claims(cell) for part in claim.parts + claim.controls
               for cell, _ in selected_cells(part, cells).values() if values.stored(cell)]
    recorded = [r for r in records if r is not None]
    if any(r.get(claim.id, digest) != digest for r in recorded):
        return CHANGED
    if any(claim.id not in r for r in recorded):
        return AFTER
    return UNRECORDED if len(recorded) < len(records) else None
