"""A profile's registration: its claims frozen in a file before the confirmation seeds that
decide them run (``geobench register``; docs/claims.md, "Registrations").

The file is ``registrations/<suite>_<profile>.json`` beside the suite's ``suites/`` folder
(the repository's root for ``suites/x.yaml``; beside the suite file in any other folder),
committed with the claims. It holds every claim's canonical definition (what
``claims.registration.claim_digest`` hashes) and digest, the confirmation seeds, the code
commit, the plugins of the profile's cells with their versions and the time. A run records
the sha256 of the registration in force with every cell it stores (kept, like the claims,
from a cell's first record). Where a profile has one, a claim decided on its confirmation
seeds is post hoc with the first reason that applies: ``confirmation seeds changed after
its registration``, ``not in its registration``, ``changed after its registration`` (its
digest differs), or ``a deciding cell ran outside its registration`` (a cell it reads
recorded no registration, or another one). The sha256 is of the file's bytes: keep the
file as written (``.gitattributes`` marks ``registrations/*.json`` ``-text``).

A profile's replication seeds (``replicate:``) have a registration of their own,
``<suite>_<profile>.replicate.json``, written the same way before they run: the same claims'
definitions and digests, the replication seeds (``replicate``) and the sha256 of the
registration they replicate (``replicates``). The cells of replication seeds record its
sha256, and a verdict on them is post hoc for the same reasons (docs/claims.md,
"Replication").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geobench.claims.registration import WORDING, claim_digest, claims_digest
from geobench.claims.select import selected_cells
from geobench.claims.values import StoredValues
from geobench.records import Cell, plugins, utc_iso
from geobench.suite import LoadedSuite
from geobench.suite.schema import Claim
from geobench.suite.seeds import SeedSet, seed_plan
from geobench.suite.yamlio import SuiteError

REGISTRATION_FORMAT = 1  # bumped when a key changes meaning
FOLDER = "registrations"
NOT_REGISTERED = "not in its registration"
CHANGED = "changed after its registration"
OUTSIDE = "a deciding cell ran outside its registration"
SEEDS = "confirmation seeds changed after its registration"
REPLICATE_SEEDS = "replication seeds changed after their registration"
Registered = SeedSet  # the seeds a registration covers: "confirm" or "replicate"


def registration_path(loaded: LoadedSuite, profile: str, which: Registered = "confirm"
                      ) -> Path:
    """Where ``profile``'s registration lives: ``registrations/<suite>_<profile>.json``
    (``.replicate.json``: its replication seeds') beside the suite's ``suites/`` folder, or
    beside the suite file in any other folder."""
    folder = Path(loaded.path).resolve().parent
    root = folder.parent if folder.name == "suites" else folder
    suffix = ".replicate.json" if which == "replicate" else ".json"
    path = root / FOLDER / f"{loaded.suite.name}_{profile}{suffix}"
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def registration_record(loaded: LoadedSuite, profile: str, cells: list[Cell],
                        code: str | None, now: float, which: Registered = "confirm",
                        replicates: str | None = None) -> dict[str, Any]:
    """The registration of ``profile``'s ``which`` seeds (its cells are ``cells``) at time
    ``now`` (seconds since the epoch) under the code commit ``code`` (None outside a git
    checkout); a replication's names the sha256 of the registration it ``replicates``."""
    suite = loaded.suite
    return {"format": REGISTRATION_FORMAT, "suite": suite.name, "profile": profile,
            "paper": suite.paper,
            "registered": utc_iso(now),
            "code": code, "plugins": plugins([c.versions for c in cells]),
            which: seed_plan(loaded, profile).seeds(which),
            **({"replicates": replicates} if which == "replicate" else {}),
            "claims_digest": claims_digest(suite),
            "claims": [{"id": c.id, "digest": claim_digest(c), "statement": c.statement,
                        "definition": c.model_dump(mode="json", exclude=WORDING)}
                       for c in suite.claims]}


def file_sha256(path: Path) -> str:
    """The sha256 of the file at ``path``, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Registration:
    """A registration as read from ``path``: its ``record``, the file's ``sha256`` and the
    seeds it covers (``which``: the confirmation or the replication seeds)."""

    path: Path
    record: dict[str, Any]
    sha256: str
    which: Registered = "confirm"

    @property
    def digests(self) -> dict[str, str]:
        """Claim id -> the digest registered."""
        return {c["id"]: c["digest"] for c in self.record["claims"]}

    def same_claims(self, loaded: LoadedSuite, profile: str) -> bool:
        """Whether ``loaded``'s claims and ``profile``'s seeds (of the registration's set) are
        the ones registered."""
        return (self.digests == {c.id: claim_digest(c) for c in loaded.suite.claims}
                and self.record[self.which] == seed_plan(loaded, profile).seeds(self.which))

    def reason(self, claim: Claim, cells: list[Cell], values: StoredValues,
               seeds: list[int]) -> str | None:
        """Why ``claim``'s verdict on ``cells`` (of the trial seeds ``seeds``, the set the
        registration covers) is not decided under this registration (the module's reasons,
        the first that applies), or None."""
        if self.record[self.which] != seeds:
            return SEEDS if self.which == "confirm" else REPLICATE_SEEDS
        if claim.id not in self.digests:
            return NOT_REGISTERED
        if self.digests[claim.id] != claim_digest(claim):
            return CHANGED
        read = [cell for part in claim.parts + claim.controls
                for cell, _ in selected_cells(part, cells).values() if values.stored(cell)]
        if any(values.registration(cell) != self.sha256 for cell in read):
            return OUTSIDE
        return None


def read_registration(loaded: LoadedSuite, profile: str, which: Registered = "confirm"
                      ) -> Registration | None:
    """``profile``'s registration of its ``which`` seeds, None when it has none; a file that
    is no registration of this suite and profile is refused in one line naming it."""
    path = registration_path(loaded, profile, which)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
        ok = (record.get("format") == REGISTRATION_FORMAT
              and (record.get("suite"), record.get("profile")) == (loaded.suite.name, profile)
              and isinstance(record.get(which), list)
              and isinstance(record.get("registered"), str)
              and all({"id", "digest"} <= set(c) for c in record["claims"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SuiteError(f"{path}: not a readable registration ({exc}); "
                         f"write it anew with `geobench register`") from None
    if not ok:
        raise SuiteError(f"{path}: not a registration of suite {loaded.suite.name!r}, profile "
                         f"{profile!r} (format {REGISTRATION_FORMAT}); write it anew with "
                         "`geobench register`")
    return Registration(path, record, file_sha256(path), which)
