"""The machine-readable page beside a leaderboard, ``<stem>.json``: the suite, profile and
paper, the cells' provenance, every claims section's verdicts (numbers and the texts the
markdown prints), the names of the files beside it (results, units and cells CSVs, forest
plot, figures), the registration the verdicts were decided under and the sha256 of every
file.  ``geobench site`` builds the results site from these records; anyone can read them
without geobench."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

from geobench.claims.claims_table import (
    Section,
    format_p,
    holm_text,
    n_text,
    part_text,
)
from geobench.claims.family import PaperFamily
from geobench.claims.forest import forest_points, format_effect, standardised
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import RULES, Verdict
from geobench.publish.doclinks import link_references
from geobench.records import Cell, Status, plugins, utc_iso
from geobench.report.paths import shown_path
from geobench.suite import LoadedSuite
from geobench.suite.schema import Claim
from geobench.suite.seeds import seed_plan

RECORD_FORMAT = 1  # bumped when a key changes meaning
RECORD_SUFFIX = ".json"


def provenance(cells: list[Cell], values: StoredValues) -> dict[str, Any]:
    """What ran the cells: code versions (``-dirty`` with uncommitted changes), geobench's
    versions and every plugin whose components the cells use (``plugins``), torch,
    devices, CPU models (where recorded), torch threads per cell, the largest peak resident
    memory of a cell (MiB; None where no cell recorded one), the cells' statuses, how many
    complete cells each arm diverged in, trial seeds and when the first and last finished
    (UTC, ISO 8601; None when none has)."""
    provs = [r["provenance"] for r in values.rows.values()]
    finished = sorted(t for c in cells if (t := values.finished(c)) is not None)
    versions = [r["config"].get("versions", {}) for r in values.rows.values()]
    return {
        "code": sorted({(p.get("git_sha") or "unknown")[:10]
                        + ("-dirty" if p.get("git_dirty") else "") for p in provs}),
        "geobench": sorted({v["geobench"] for v in versions if "geobench" in v}),
        "plugins": plugins(versions),
        "torch": sorted({p.get("torch", "?") for p in provs}),
        "devices": sorted({p.get("device", "?") for p in provs}),
        "cpus": sorted({p["cpu"] for p in provs if p.get("cpu")}),
        "threads": sorted({str(p["threads"]) for p in provs if p.get("threads")}),
        "statuses": dict(sorted(Counter(values.status(c) for c in cells).items())),
        "arms_diverged": dict(sorted(Counter(
            name for c in cells if values.status(c) == Status.COMPLETE
            for name, arm in values.rows[c.id]["arms"].items()
            if arm.status == Status.DIVERGED).items())),
        "peak_mb": max((p["peak_mb"] for p in provs if p.get("peak_mb")), default=None),
        "trial_seeds": sorted({c.trial_seed for c in cells}),
        "ran": [utc_iso(finished[0]), utc_iso(finished[-1])] if finished else None,
    }


def part_record(p: Verdict, claim: Claim) -> dict[str, Any]:
    """One decided part (or the claim itself, or a control): what it tests, its effect and
    interval on the tested scale (with ``edge``, the value d must clear: ±margin) and on the
    axis a reader compares, its ``position`` on the forest plot's shared axis (None without
    an interval), n, p and verdict."""
    shown = forest_points(p)
    position = standardised(p)
    return {"tested": part_text(p.claim, claim), "metric": p.claim.metric,
            "expect": p.claim.expect.strip(), "scale": p.claim.scale,
            "margin": p.claim.margin,
            "edge": p.claim.margin if p.claim.expects_greater else -p.claim.margin,
            "ci": p.ci, "effect": p.effect, "ci_low": p.ci_low, "ci_high": p.ci_high,
            "axis": shown[4], "threshold": shown[3],
            "position": None if position is None else position[0],
            "effect_text": format_effect(p), "n": p.n, "n_text": n_text(p),
            "excluded": p.excluded, "missing": p.missing, "p_value": p.p_value,
            "p_text": format_p(p.p_value), "verdict": p.verdict}


def claim_record(v: Verdict) -> dict[str, Any]:
    """A claim's record: id, kind, source, statement, post hoc reason (None when
    pre-registered), a corollary's premises (``implied_by``, only on a corollary), why it is
    degenerate (None: it has a test), quoted per suite (None:
    over its paper's family) or revised after publication (with the verdict it had before),
    whether a control did not fire, the main part's numbers (for a claim
    with parts: its first part's, beside the combined p-value and verdict), the Holm
    verdicts (suite, paper), the raw verdict at the suite's other scales, its parts and
    controls and, where the replication seeds ran, its raw verdict there, why that is post
    hoc (None: it is not) and whether it ``replicates`` (``Verdict.replicates``)."""
    c = v.claim
    return {"id": c.id, "kind": c.kind, "source": c.source, "statement": c.statement,
            "posthoc": v.posthoc, "degenerate": v.degenerate, "per_suite": c.per_suite,
            "revised": v.revised, "revised_from": v.revised_from,
            **({"implied_by": c.implied_by} if c.implied_by else {}),
            "unfired": v.unfired, **part_record(v, c),
            "verdict_holm": v.verdict_holm, "holm_text": holm_text(v),
            "verdict_paper": v.verdict_paper, "scales": dict(v.scales),
            "parts": [part_record(p, c) for p in v.parts],
            "controls": [part_record(p, c) for p in v.controls],
            **({"replicated": v.replicated, "replicated_posthoc": v.replicated_posthoc,
                "replicates": v.replicates} if v.replicated is not None else {})}


def section_record(verdicts: list[Verdict], section: Section, out: Path, seeds: str,
                   family: PaperFamily | None, forest: bool) -> dict[str, Any]:
    """A claims section: its heading and note (without its references to the docs, which
    a page read elsewhere cannot link), the seeds that decide it (``confirm`` or
    ``explore``), its units CSV and forest plot (None without one), Holm's paper family,
    and every claim."""
    return {"heading": section.heading, "note": link_references(section.note, None),
            "seeds": seeds,
            "units": f"{out.stem}{section.suffix}.csv",
            "forest": f"{out.stem}{section.suffix}.png" if forest else None,
            "family": None if family is None else {
                "paper": family.paper, "suites": family.suites, "not_run": family.not_run,
                "size": family.size},
            "claims": [claim_record(v) for v in verdicts]}


def page_record(loaded: LoadedSuite, profile: str, cells: list[Cell], values: StoredValues,
                out: Path, sections: list[dict[str, Any]], figures: list[tuple[str, str]],
                values_file: str, store: dict[str, str | None], files: list[str],
                registration: dict[str, str] | None, cells_file: str, hashes: dict[str, str],
                retired: list[dict[str, Any]],
                replication: dict[str, str] | None = None) -> dict[str, Any]:
    """The record of the leaderboard ``out``: everything above, ``figures`` as
    (series key, file name) pairs, the store it was published from (its id and file name,
    ``report.overwrite``), the names of every file written with it (``files``, itself
    included), the registration its verdicts were decided under (its path from the page,
    time and sha256; None: none), the CSV of what each cell ran under (``cells_file``,
    ``report.cell_rows``), the sha256 of every file written with it but itself
    (``hashes``), its retired claims (``report.retired``), the verdict rules it was
    decided under (``claims.verdicts.RULES``) and, where the profile declares replication
    seeds, their registration (``replication``, as ``registration``)."""
    suite = loaded.suite
    plan = seed_plan(loaded, profile)
    return {"format": RECORD_FORMAT, "suite": suite.name, "profile": profile,
            "paper": suite.paper, "description": suite.description.strip(),
            "suite_file": shown_path(loaded.path), "page": out.name,
            "generated": dt.date.today().isoformat(), "cells": len(cells),
            "seeds": {"explore": plan.seeds("explore"),
                      "confirm": plan.seeds("confirm") if plan.confirm else [],
                      **({"replicate": plan.seeds("replicate")} if plan.replicate else {})},
            **provenance(cells, values), "results": out.with_suffix(".csv").name,
            "values": values_file, "claims": sections,
            "figures": [{"key": key, "file": name} for key, name in figures],
            "store": store, "files": sorted(files), "registration": registration,
            "cells_file": cells_file, "sha256": hashes, "retired": retired, "rules": RULES,
            **({"replication": replication} if plan.replicate else {})}
