"""Verify a published page from its files alone (``geobench verify``): its record
(``<stem>.json``), the files it lists beside it and the registration it names — no store, no
plugins, no torch. The checks, in order, stopping at the first inconsistency:

1. **hashes**: every file the record lists under ``sha256`` (the markdown, its CSVs, values
   file and figures) has that sha256, the page was decided under this version's verdict
   rules, the files verify reads are among them, and the
   registration it names has the sha256 recorded (a record without them predates them:
   republish the page);
2. **units**: each unit's a and b that is a stored value equals the values file's
   (``recompute.check_units``);
3. **verdicts**: whether each claim is counted, its raw and Holm verdicts and p-value, and
   every part's and control's n, effect, interval, p-value and verdict, recomputed from the
   units alone (``recompute``, which shares no code with the one that computed the page),
   equal the record's (floats to a relative 1e-6);
4. **revisions**: no claim the page counts reads a cell whose values changed after the page
   first published them (``<stem>_cells.csv``: ``values`` against ``published``);
5. **registration**: each registered digest is the sha256 of its registered definition, and
   for every claim the page counts as pre-registered on the confirmation seeds, the
   registered confirmation seeds are the page's, the claim is registered and every cell its
   units read has a row in ``<stem>_cells.csv`` (unless it was missing from the store) that
   started after the registration was made, recorded it (its sha256) and recorded the
   claim's registered digest;
6. **replication**, where the page shows one: the same for the replication section under
   the replication seeds' registration, and each claim's ``replicates`` is what its two
   recomputed raw verdicts say (the same verdict, where the replication's is pre-registered).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geobench.audit import recompute

REL_TOL = 1e-6  # floats of the record against their recomputation
NUMBERS = ("effect", "ci_low", "ci_high", "p_value")


class Inconsistent(Exception):
    """The first inconsistency of a page: the file, its line (None: the file as a whole),
    the claim (None: none in particular) and what differs."""

    def __init__(self, file: str, message: str, line: int | None = None,
                 claim: str | None = None) -> None:
        where = file + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: " + (f"claim {claim}: " if claim else "") + message)


@dataclass(frozen=True)
class Verified:
    """What verifying a page checked: files hashed, unit values rebuilt, claims recomputed,
    and the registration (its path; None: the page has none) with the deciding cells read
    against it."""

    files: int
    values: int
    claims: int
    registration: str | None
    deciding: int
    replication: str | None = None
    replicating: int = 0


def record_of(path: Path) -> Path:
    """The record of the page ``path`` names (its ``.md`` or its ``.json``)."""
    return path.with_suffix(".json")


def page_records(folder: Path) -> list[Path]:
    """The page records in ``folder``: each ``.json`` beside a ``.md`` of the same stem."""
    return sorted(p for p in folder.glob("*.json") if p.with_suffix(".md").is_file())


def verify_page(path: Path) -> Verified:
    """Verify the page whose record is at ``path`` (the module's checks); raise
    ``Inconsistent`` at the first inconsistency, or where a file cannot be read as
    published."""
    try:
        return _verify(path)
    except Inconsistent:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError,
            StopIteration, csv.Error) as exc:
        raise Inconsistent(path.name, f"cannot be read as a published page "
                                      f"({type(exc).__name__}: {exc})") from None


def _verify(path: Path) -> Verified:
    record = _read_json(path)
    folder = path.parent
    hashes = record.get("sha256")
    if not hashes:
        raise Inconsistent(path.name, "the record lists no sha256 of its files (published "
                                      "before pages recorded them): republish the page")
    if record.get("rules", 1) != recompute.RULES:
        raise Inconsistent(path.name, f"decided under verdict rules {record.get('rules', 1)}, "
                                      f"not this version's {recompute.RULES} "
                                      "(docs/claims.md, \"Verdict rules\"): republish the page")
    read = [path.with_suffix(".md").name, record["values"], record["cells_file"],
            *(s["units"] for s in record["claims"])]
    if unhashed := [name for name in read if name not in hashes]:
        raise Inconsistent(path.name, f"lists no sha256 of {unhashed[0]}, which it reads")
    for name, digest in sorted(hashes.items()):
        _same_hash(folder / name, name, digest)
    registered, replication = record.get("registration"), record.get("replication")
    for named in (registered, replication):
        if named is not None:
            _same_hash(folder / named["file"], named["file"], named["sha256"])
    values = claims = 0
    wanted = set().union(*(recompute.unit_metrics(str(folder / s["units"]))
                           for s in record["claims"]))
    series = recompute.read_values(str(folder / record["values"]), wanted) if wanted else {}
    for section in record["claims"]:
        units = folder / section["units"]
        checked, _, differ = recompute.check_units(str(units), series)
        if differ:
            line, _, rest = differ[0].partition(", ")
            raise Inconsistent(units.name, rest, int(line.split()[1]))
        values += checked
        claims += check_verdicts(section, units)
    _unrevised(record, folder)
    _replicates(record)
    deciding = replicating = 0
    if registered is not None:
        deciding = _registered(record, folder, registered, "confirm")
    if replication is not None:
        replicating = _registered(record, folder, replication, "replicate")
    return Verified(len(hashes), values, claims,
                    None if registered is None else registered["file"], deciding,
                    None if replication is None else replication["file"], replicating)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise Inconsistent(path.name, f"not a readable record ({exc})") from None


def _same_hash(path: Path, name: str, digest: str) -> None:
    if not path.is_file():
        raise Inconsistent(name, "listed in the record, but not there")
    if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise Inconsistent(name, f"its sha256 is not the record's ({digest[:12]}…): the file "
                                 "changed after the page was published")


def check_verdicts(section: dict[str, Any], units: Path, rules: int = recompute.RULES) -> int:
    """Compare each claim of ``section`` with its recomputation from ``units`` under verdict
    ``rules``; the number of claims compared."""
    parts, controls, claims = recompute.recompute_all(str(units), rules)
    for claim in section["claims"]:
        cid = claim["id"]
        if cid not in claims:
            raise Inconsistent(units.name, "has no units", claim=cid)
        mine = claims[cid]
        outside = claim["posthoc"] is not None or claim["kind"] != "claim" \
            or claim.get("degenerate") is not None or claim.get("revised") is not None
        _same(units.name, cid, "outside the counts", outside, mine["posthoc"])
        for key in ("verdict", "verdict_holm", "p_value"):
            _same(units.name, cid, key, claim[key], mine[key])
        for i, part in enumerate(claim["parts"] or [claim], start=1):  # a claim of one part
            _same_part(units.name, f"{cid} part {i}", part, parts.get((cid, i)),
                       bool(claim["parts"]))  # shows the claim's verdict, gated by controls
        for i, control in enumerate(claim["controls"], start=1):
            _same_part(units.name, f"{cid} control c{i}", control, controls.get((cid, f"c{i}")))
    return len(section["claims"])


def _same_part(file: str, claim: str, published: dict[str, Any],
               recomputed: dict[str, Any] | None, own_verdict: bool = True) -> None:
    """A part's (or control's) n and verdict (``own_verdict``: the record shows the part's
    own), and its numbers where the part was decided (an undecided part has none to
    recompute)."""
    if recomputed is None:
        raise Inconsistent(file, "has no units", claim=claim)
    keys = ["n"] + (["verdict"] if own_verdict else [])
    keys += list(NUMBERS) if "effect" in recomputed else []
    for key in keys:
        _same(file, claim, key, published.get(key), recomputed.get(key))


def _same(file: str, claim: str, key: str, published: Any, recomputed: Any) -> None:
    if isinstance(published, float) and isinstance(recomputed, float):
        equal = math.isclose(published, recomputed, rel_tol=REL_TOL, abs_tol=1e-12) or (
            math.isnan(published) and math.isnan(recomputed))
    else:
        equal = published == recomputed
    if not equal:
        raise Inconsistent(file, f"{key} is {published!r} on the page, {recomputed!r} "
                                 "recomputed from the units", claim=claim)


def _registered(record: dict[str, Any], folder: Path, named: dict[str, str],
                seeds: str) -> int:
    """Check the registration the record ``named`` and, for every claim the page counts as
    pre-registered on its ``seeds`` (``confirm`` or ``replicate``), each cell its units read
    against it; the number of those cells."""
    name = named["file"]
    registration = _read_json(folder / name)
    digests = {}
    for claim in registration["claims"]:
        text = json.dumps(claim["definition"], sort_keys=True, separators=(",", ":"))
        if hashlib.sha256(text.encode()).hexdigest()[:16] != claim["digest"]:
            raise Inconsistent(name, "its registered digest is not that of its registered "
                                     "definition", claim=claim["id"])
        digests[claim["id"]] = claim["digest"]
    section, counted = _counted(record, seeds)
    kind = "confirmation" if seeds == "confirm" else "replication"
    for cid in counted:
        if registration.get(seeds) != record["seeds"][seeds]:
            raise Inconsistent(name, f"registers {kind} seeds {registration.get(seeds)}, "
                                     f"the page decides on {record['seeds'][seeds]}, yet "
                                     "the claim counts as pre-registered", claim=cid)
        if cid not in digests:
            raise Inconsistent(name, "counted as pre-registered on the page, but not "
                                     "registered", claim=cid)
    made = _utc(registration["registered"])
    sha = named["sha256"]  # the file's, checked first
    cells_file = record["cells_file"]
    with (folder / cells_file).open(newline="") as fh:
        ran = {row["cell"]: (line, row) for line, row in enumerate(csv.DictReader(fh), start=2)}
    read = _cells_read(folder / section["units"], set(counted)) if section else {}
    for (cid, cell), excluded in sorted(read.items()):
        if cell not in ran:
            if "missing" in excluded:  # not in the store when the page was published
                continue
            raise Inconsistent(cells_file, f"has no row of cell {cell}, which the claim's "
                                           "units read", claim=cid)
        line, row = ran[cell]
        digest = json.loads(row["claims"] or "{}").get(cid)
        if not row["started"] or _utc(row["started"]) < made:
            problem = (f"cell {cell} started {row['started'] or 'at no time'}, before its "
                       f"registration ({registration['registered']})")
        elif row["registration"] != sha:
            problem = f"cell {cell} ran under another registration or none"
        elif digest != digests[cid]:
            problem = f"cell {cell} ran under digest {digest}, not the registered {digests[cid]}"
        else:
            continue
        raise Inconsistent(cells_file, problem + ", yet the claim counts as pre-registered",
                           line, cid)
    return len({cell for _, cell in read})


def _counted(record: dict[str, Any], seeds: str = "confirm"
             ) -> tuple[dict[str, Any] | None, list[str]]:
    """The record's section of ``seeds`` (None: none) and the claims it counts."""
    section = next((s for s in record["claims"] if s["seeds"] == seeds), None)
    return section, [] if section is None else [
        c["id"] for c in section["claims"] if c["posthoc"] is None and c["kind"] == "claim"
        and c.get("degenerate") is None and c.get("revised") is None]


def _replicates(record: dict[str, Any]) -> None:
    """Each confirmation claim's ``replicated`` is its raw verdict in the replication
    section (checked against the units already), and ``replicates`` whether that equals its
    own, where that verdict is pre-registered and the claim is in the profile (None where
    not)."""
    confirm, _ = _counted(record)
    replicate, _ = _counted(record, "replicate")
    if confirm is None or replicate is None:
        return
    again = {c["id"]: c for c in replicate["claims"]}
    for claim in confirm["claims"]:
        cid, other = claim["id"], again.get(claim["id"])
        if other is None:
            raise Inconsistent(replicate["units"], "not in the replication section", claim=cid)
        untested = claim["verdict"] == recompute.NOT_IN_PROFILE
        same = None if other["posthoc"] is not None or untested \
            else other["verdict"] == claim["verdict"]
        for key, recomputed in (("replicated", other["verdict"]), ("replicates", same)):
            _same(confirm["units"], cid, key, claim.get(key), recomputed)


def _unrevised(record: dict[str, Any], folder: Path) -> None:
    """No claim the page counts reads a cell whose values changed after the page first
    published them (its cells CSV's ``values`` against ``published``)."""
    confirm, counted = _counted(record)
    if confirm is None:
        return
    with (folder / record["cells_file"]).open(newline="") as fh:
        revised = {row["cell"] for row in csv.DictReader(fh)
                   if row.get("published") and row["published"] != row.get("values")}
    for (cid, cell), _ in sorted(_cells_read(folder / confirm["units"], set(counted)).items()):
        if cell in revised:
            raise Inconsistent(record["cells_file"], f"cell {cell} changed after the page "
                               "published it, yet the claim counts (it reads revised)",
                               claim=cid)


def _cells_read(units: Path, claims: set[str]) -> dict[tuple[str, str], str]:
    """(claim, cell) -> the unit's ``excluded`` text, for every cell a unit of ``claims``
    reads (its ``cell`` and ``cell_b``) in the units CSV."""
    read: dict[tuple[str, str], str] = {}
    with units.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["claim"] in claims:
                for cell in (row["cell"], row["cell_b"]):
                    if cell:
                        read[(row["claim"], cell)] = row["excluded"]
    return read


def _utc(text: str) -> dt.datetime:
    """An ISO 8601 time that names its offset (a page's and a registration's do)."""
    when = dt.datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError(f"{text!r} names no UTC offset")
    return when
