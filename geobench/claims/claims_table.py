"""A suite's claims as a reader meets them: the claims table (one row per part), its summary
line, the post hoc footnotes, and every unit as CSV rows anyone can recompute from."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from geobench.claims.forest import KIND_MARKS, forest_png, format_effect, marks
from geobench.claims.forms import form_of
from geobench.claims.forms.trend import trend_text
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict
from geobench.publish.doclinks import (
    GEOBENCH_DOCS,
    doc_target,
    github_anchor,
    link_references,
)
from geobench.publish.markdown import markdown_table
from geobench.suite.schema import Claim

if TYPE_CHECKING:
    from geobench.claims.family import PaperFamily


TESTED_WIDTH = 80
OUTCOMES = ("holds", "fails", "inconclusive", "insufficient")
NO_CELL = "absent: no cell of this profile selected"
UNIT_COLUMNS = ["claim", "kind", "posthoc", "part", "metric", "stat", "expect", "scale",
                "margin", "ci", "trend", "trial_seed", "cell", "config", "cell_b", "config_b",
                "arm", "a", "b", "d", "excluded"]


def format_p(p: float | None) -> str:
    """A p-value to two significant digits; ``<1e-4`` below that."""
    if p is None:
        return "—"
    return "<1e-4" if p < 1e-4 else f"{p:.2g}"


def part_text(part: Claim, claim: Claim) -> str:
    """What a part tests, at most ``TESTED_WIDTH`` characters: metric, reduction, expectation,
    the compared values, and the cells where they differ from the claim's."""
    stat = "" if part.stat == "last" or part.compare and part.compare.stat else f" {part.stat}"
    text = f"`{part.metric}`{stat} {part.expect.strip()}" + form_of(part).describe(part)
    if part.margin:
        text += f" by {part.margin:g}"
    if part.where != claim.where:
        base = claim.where if isinstance(claim.where, dict) else {}
        own = [{k: v for k, v in w.items() if base.get(k) != v} for w in part.alternatives]
        text += " at " + " or ".join(", ".join(f"{k}={v}" for k, v in w.items()) for w in own)
    return text if len(text) <= TESTED_WIDTH else text[:TESTED_WIDTH - 1] + "…"


def paper_link(source: str, out_dir: Path | None, suite_path: Path | None) -> str:
    """``source`` as a markdown link to its section of the suite's papers page
    (``docs/papers.md`` beside the suite's folder), where the link resolves from a page in
    ``out_dir`` (``doc_target``); the plain text elsewhere. The section is the source up to
    its first '(' or ','."""
    if not source or out_dir is None or suite_path is None:
        return source
    doc = Path(suite_path).resolve().parent.parent / "docs" / "papers.md"
    target = doc_target(doc, out_dir, section_anchor(source))
    return source if target is None else f"[{source}]({target})"


def section_anchor(source: str) -> str:
    """The github anchor of the heading ``source`` names (its text up to '(' or ',')."""
    return github_anchor(re.split(r"[(,]", source)[0])


def _verdict_text(v: Verdict, bold: bool) -> str:
    return (f"**{v.verdict}**" if bold else v.verdict) + marks(v)


def control_text(v: Verdict) -> str:
    """A control's outcome: ``fired`` when it holds, else ``did not fire`` and its verdict."""
    return "fired" if v.verdict == "holds" else f"did not fire ({v.verdict})"


UNFIRED_NOTE = ("§ a positive control did not fire: the measurement never showed the event "
                "where it must, so the absence it finds says nothing; the claim reads "
                "inconclusive.")


DEGENERATE_NOTE = ("∅ degenerate: its units give no test (docs/claims.md, \"Degenerate "
                   "evidence\"); outside the counts and the Holm family: ")


def holm_text(v: Verdict) -> str:
    """The Holm column: the verdict, or why the claim is outside the family."""
    if v.claim.kind in ("contrast", "corollary"):
        return f"— ({v.claim.kind})"
    if v.degenerate is not None:
        return "— (degenerate)"
    if v.revised is not None:
        return "— (revised)"
    return "— (post hoc)" if v.posthoc else v.verdict_holm or "—"


def paper_holm_text(v: Verdict) -> str:
    """The Holm column over the paper's family: the verdict, or why the claim is outside."""
    if v.counted and v.claim.per_suite:
        return "— (per suite)"
    return holm_text(v) if v.verdict_paper is None else v.verdict_paper


def tested_claims(verdicts: list[Verdict]) -> list[Verdict]:
    """The claims and contrasts: every verdict but the sanity checks."""
    return [v for v in verdicts if v.claim.kind != "sanity"]


def check_result(v: Verdict) -> str:
    """A sanity check's result: ``pass`` when it holds, ``FAIL`` when it fails, else its
    verdict (it could not be decided)."""
    return {"holds": "pass", "fails": "FAIL"}.get(v.verdict, v.verdict)


def checks_table(verdicts: list[Verdict], code: str = "`") -> list[list[str]]:
    """One row per sanity check: id, what it tests, effect [95% CI], n and its result."""
    return [[f"{code}{v.claim.id}{code}", part_text(v.claim, v.claim) if not v.parts
             else f"all {len(v.parts)} parts", format_effect(v), n_text(v), check_result(v)]
            for v in verdicts if v.claim.kind == "sanity"]


CHECKS_NOTE = ("Sanity checks: identities that hold by construction when the implementation "
               "is right; they test the code, not the paper, and stay outside the counts and "
               "the Holm family.")


def n_text(v: Verdict) -> str:
    return str(v.n) + (f" ({v.pairs} units)" if v.pairs != v.n else "") \
        + (f", {v.excluded} excluded" if v.excluded else "") \
        + (f", {v.missing} missing" if v.missing else "")


def claims_table(verdicts: list[Verdict], out_dir: Path | None = None,
                 suite_path: Path | None = None, family: PaperFamily | None = None) -> str:
    """The claims table, one row per part (a claim with ``also`` gets a row of its own for
    the combined verdict), with Holm's verdict over the paper's ``family`` and the raw
    verdicts at the suite's other scales where they are known, then the post hoc footnotes,
    the summary line and the sanity checks."""
    scaled = any(v.scales for v in verdicts)
    replicated = any(v.replicated is not None for v in verdicts)
    rows = []
    for v in tested_claims(verdicts):
        c = v.claim
        statement = f"{paper_link(c.source, out_dir, suite_path)}: {c.statement}" \
            if c.source else c.statement
        extra = ([paper_holm_text(v)] if family else []) \
            + ([replicates_text(v)] if replicated else []) + ([scales_text(v)] if scaled else [])
        blank = [""] * len(extra)
        if not v.parts:
            rows.append([f"`{c.id}`", statement, part_text(c, c), format_effect(v), n_text(v),
                         format_p(v.p_value), _verdict_text(v, True), holm_text(v), *extra])
        else:
            rows.append([f"`{c.id}`", statement, f"all {len(v.parts)} parts below", "", "",
                         format_p(v.p_value), _verdict_text(v, True), holm_text(v), *extra])
        for i, p in enumerate(v.parts, 1):
            rows.append(["", "", f"{i}. {part_text(p.claim, c)}", format_effect(p), n_text(p),
                         format_p(p.p_value), p.verdict, "", *blank])
        for k, p in enumerate(v.controls, 1):
            rows.append(["", "", f"control {k}. {part_text(p.claim, c)}", format_effect(p),
                         n_text(p), format_p(p.p_value), control_text(p), "", *blank])
    headers = ["claim", "statement", "tested", "effect [95% CI]", "n (trial seeds)", "p",
               "verdict", "Holm"] + ([f"Holm ({family.paper})"] if family else []) \
        + (["replicates"] if replicated else []) + (["other scales"] if scaled else [])
    checks = checks_table(verdicts)
    notes = posthoc_notes(verdicts) + degenerate_notes(verdicts) + revised_notes(verdicts) \
        + ([UNFIRED_NOTE] if any(v.unfired for v in verdicts) else []) + [summary_line(verdicts)] \
        + ([family.note(verdicts)] if family else []) \
        + ([replication_line(verdicts)] if replicated else [])
    if out_dir is not None:  # on a page: its references to the docs linked or left out
        notes = [link_references(n, out_dir) for n in notes]
    return markdown_table(rows, headers) + "".join(f"\n{n}\n" for n in notes) + (
            f"\n{CHECKS_NOTE}\n\n" + markdown_table(
                checks, ["check", "tested", "effect [95% CI]", "n (trial seeds)", "result"])
            if checks else "")


def scales_text(v: Verdict) -> str:
    """The claim's raw verdict in each other profile run, e.g. ``mid: fails``; a verdict
    that differs from this profile's, where both decide, in bold."""
    decided = {"holds", "fails"}
    return "; ".join(f"{p}: **{w}**" if {w, v.verdict} <= decided and w != v.verdict
                     else f"{p}: {w}" for p, w in v.scales.items()) or "—"


def replicates_text(v: Verdict) -> str:
    """Whether the claim's raw verdict replicates on the replication seeds: ``yes (holds)``,
    ``**no** (inconclusive)``, ``— (fails, post hoc)`` where that verdict is post hoc, or
    ``—`` where they did not run."""
    if v.replicated is None or v.verdict == NOT_IN_PROFILE:
        return "—"
    if v.replicates is None:
        return f"— ({v.replicated}, post hoc)"
    return f"yes ({v.replicated})" if v.replicates else f"**no** ({v.replicated})"


def replication_line(verdicts: list[Verdict]) -> str:
    """How many counted claims tested in the profile replicate (the same raw verdict on the
    replication seeds, decided under their registration), and which do not."""
    counted = [v for v in verdicts if v.counted and v.verdict != NOT_IN_PROFILE]
    same = [v for v in counted if v.replicates]
    other = [v for v in counted if v.replicates is False]
    line = (f"**Replication:** {len(same)} of the {len(counted)} counted claims tested here "
            "give the same raw verdict on the replication seeds (docs/claims.md, "
            "\"Replication\")")
    if other:
        line += "; not: " + ", ".join(f"`{v.claim.id}` {v.verdict} → {v.replicated}"
                                     for v in other)
    unknown = len(counted) - len(same) - len(other)
    return line + (f"; {unknown} not replicated (not run, or post hoc there)" if unknown
                   else "") + "."


def posthoc_notes(verdicts: list[Verdict], code: str = "`") -> list[str]:
    """One note per claim the suite declares post hoc, with its reason, then one per
    automatic reason (``claims.registration``) listing its claims; ids quoted by ``code``."""
    notes = [f"† post hoc, {code}{v.claim.id}{code}: {v.declared}" for v in verdicts
             if v.declared]
    found: dict[str, list[str]] = {}
    for v in verdicts:
        if v.seen:
            found.setdefault(v.seen, []).append(f"{code}{v.claim.id}{code}")
    return notes + [f"† post hoc, {reason} (docs/claims.md, \"Confirmation seeds\"): "
                    f"{', '.join(ids)}" for reason, ids in found.items()]


def revised_notes(verdicts: list[Verdict], code: str = "`") -> list[str]:
    """One note per claim revised after publication: the verdict it had before, and why."""
    return [f"↻ revised after publication, {code}{v.claim.id}{code}: "
            f"{v.revised_from or 'a verdict not recorded'} before, {v.verdict} now ({v.revised}; "
            "docs/claims.md, \"Revised verdicts\")" for v in verdicts if v.revised]


def degenerate_notes(verdicts: list[Verdict], code: str = "`") -> list[str]:
    """One note listing the degenerate claims, each with why (ids quoted by ``code``)."""
    found = [f"{code}{v.claim.id}{code} ({v.degenerate})" for v in verdicts if v.degenerate]
    return [DEGENERATE_NOTE + "; ".join(found) + "."] if found else []


def beside_table(by_profile: dict[str, list[Verdict]]) -> str:
    """One row per claim: its effect [95% CI] and verdict (Holm's after a slash) in each of
    two profiles, and ``changed`` where both decide it (neither is insufficient nor lacks
    its cells) and the raw verdicts differ."""
    (left, a), (right, b) = by_profile.items()
    rows = []
    for u, v in zip(a, b, strict=True):
        tested = not {u.verdict, v.verdict} & {NOT_IN_PROFILE, "insufficient"}
        rows.append([f"`{u.claim.id}`" + ("†" if u.posthoc else "")
                     + {"sanity": " (check)", **KIND_MARKS}.get(u.claim.kind, ""),
                     format_effect(u), _verdicts(u), format_effect(v), _verdicts(v),
                     "changed" if tested and u.verdict != v.verdict else ""])
    headers = ["claim", f"{left}: effect [95% CI]", f"{left}: verdict / Holm",
               f"{right}: effect [95% CI]", f"{right}: verdict / Holm", ""]
    corollary = "⇐ corollary, " if any(u.claim.kind == "corollary" for u in a) else ""
    return markdown_table(rows, headers) + (f"\n† post hoc, ‡ contrast, {corollary}(check) "
                                            "sanity check: outside the Holm family\n")


def _verdicts(v: Verdict) -> str:
    return v.verdict + (f" / {v.verdict_holm}" if v.verdict_holm else "")


def summary_line(verdicts: list[Verdict]) -> str:
    """Pre-registered claims counted by raw and by Holm verdict; post hoc claims,
    degenerate ones and contrasts apart."""
    pre = [v for v in verdicts if v.counted]
    post = [v for v in verdicts if v.claim.kind == "claim" and v.posthoc and not v.degenerate
            and not v.revised]
    empty = [v for v in verdicts if v.claim.kind == "claim" and v.degenerate]
    redone = [v for v in verdicts if v.claim.kind == "claim" and v.revised and not v.degenerate]
    contrasts = [v for v in verdicts if v.claim.kind == "contrast"]
    corollaries = [v for v in verdicts if v.claim.kind == "corollary"]
    held = {v.claim.id for v in verdicts if v.verdict == "holds"}

    family = sum(v.p_value is not None for v in pre)
    noun = "claim" if len(pre) == 1 else "claims"
    line = (f"**Pre-registered: {len(pre)} {noun}** — raw: "
            f"{counts_text([v.verdict for v in pre])}; "
            f"Holm (family-wise α = 0.05 over the {family} tested): "
            f"{counts_text([v.verdict_holm or '' for v in pre])}.")
    if post:
        line += f" **Post hoc: {len(post)}** (outside the family): " + ", ".join(
            f"`{v.claim.id}` {v.verdict}" for v in post) + "."
    if redone:
        line += f" **Revised: {len(redone)}**↻ (a deciding cell changed after publication; " \
                "not counted): " + ", ".join(f"`{v.claim.id}` {v.verdict}" for v in redone) + "."
    if empty:
        line += f" **Degenerate: {len(empty)}**∅ (no test; not counted): " + ", ".join(
            f"`{v.claim.id}`" for v in empty) + "."
    if contrasts:
        line += f" **Contrasts: {len(contrasts)}**‡ (the paper does not make them; not " \
                "counted): " + ", ".join(f"`{v.claim.id}` {v.verdict}" for v in contrasts) + "."
    if corollaries:
        line += f" **Corollaries: {len(corollaries)}**⇐ (they follow from counted claims; not " \
                "counted): " + ", ".join(_corollary_text(v, held) for v in corollaries) + "."
    return line


def _corollary_text(v: Verdict, held: set[str]) -> str:
    """A corollary's entry in the summary line: its id, verdict and premises, and the first
    premise not among the claims that hold (``held``), if one is not."""
    premises = ", ".join(f"`{i}`" for i in v.claim.implied_by)
    broken = [i for i in v.claim.implied_by if i not in held]
    return f"`{v.claim.id}` {v.verdict} (from {premises}" + (
        f"; `{broken[0]}` does not hold, so it is not implied here)" if broken else ")")


def counts_text(found: list[str]) -> str:
    """``3 holds / 1 fails / 0 inconclusive / 0 insufficient`` (and ``not in this profile``
    where some are)."""
    tally = Counter(found)
    shown = OUTCOMES + ((NOT_IN_PROFILE,) if tally[NOT_IN_PROFILE] else ())
    return " / ".join(f"{tally[o]} {o}" for o in shown)


def unit_rows(verdicts: list[Verdict]) -> list[list[object]]:
    """Every unit of every part and control: the claim, its kind (claim, sanity, contrast),
    whether it is post hoc (1) or pre-registered (0), the part (1 = the main one; ``c1``,
    ``c2``, ... its controls), what the part tests (with its trend fit, if any; two
    reductions of one series as ``a-b``, e.g. ``last-first``, as the arm form's arms), the
    unit's trial seed, cells (id and grid values) and arm, the values a, b (the threshold c
    of a one-sample part), d in the tested scale, and why a unit was left out; a part without
    units (no cell of the profile selected) gets one row that says so."""
    rows = []
    for v in verdicts:
        tested = list(enumerate(v.parts or [v], 1)) + [(f"c{k}", p) for k, p in
                                                         enumerate(v.controls, 1)]
        for i, p in tested:
            c = p.claim
            stat = "-".join(c.compare.stat) if c.compare and c.compare.stat else c.stat
            outside = v.posthoc is not None or v.revised is not None
            head = [v.claim.id, v.claim.kind, int(outside), i, c.metric, stat,
                    c.expect.strip(), c.scale, c.margin, p.ci, trend_text(c)]
            rows += [head + [u.trial_seed, u.cell, u.config, u.cell_b, u.config_b, u.arm,
                             _repr(u.a), _repr(u.b), _repr(u.d), u.excluded] for u in p.units]
            if not p.units:
                rows.append(head + [""] * 9 + [NO_CELL])
    return rows


def _repr(x: float | None) -> str:
    return "" if x is None else repr(float(x))


def units_csv(verdicts: list[Verdict]) -> str:
    """``unit_rows`` as CSV text with a header."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(UNIT_COLUMNS)
    writer.writerows(unit_rows(verdicts))
    return buffer.getvalue()


@dataclass(frozen=True)
class Section:
    """How a claims section reads: its heading, a note above the table, and the suffix of
    its files' names (``<stem><suffix>.csv``, ``.png``)."""

    heading: str = "Claims"
    note: str = ""
    suffix: str = "_claims"


CONFIRMATION = Section(note="Decided on the confirmation seeds (docs/claims.md, "
                            "\"Confirmation seeds\").")
REPLICATION = Section("Claims on the replication seeds",
                      "The same claims decided again on the replication seeds, under their "
                      "own registration: the confirmation table's `replicates` column "
                      "compares the two raw verdicts (docs/claims.md, \"Replication\").",
                      "_claims_replicate")
EXPLORATION = Section("Claims on the exploration seeds",
                      "The same claims on the exploration seeds, on which claims may be "
                      "shaped: for exploring, not for quoting.", "_claims_explore")
UNCONFIRMED = Section(note="This profile declares no confirmation seeds (`confirm:`): the "
                           "verdicts read its exploration seeds (docs/claims.md, "
                           "\"Confirmation seeds\").")


def claims_section(verdicts: list[Verdict], out: Path, suite_path: Path, title: str,
                   files: dict[Path, str | bytes], section: Section = CONFIRMATION,
                   family: PaperFamily | None = None) -> str:
    """A claims section of the leaderboard ``out`` (its markdown path): the note, the table,
    the forest plot ``<stem><suffix>.png`` linked right under it, and every unit in
    ``<stem><suffix>.csv``; those two files are added to ``files``."""
    csv_path = out.with_name(f"{out.stem}{section.suffix}.csv")
    files[csv_path] = units_csv(verdicts)
    md = f"## {section.heading}\n\n{link_references(section.note, out.parent)}\n\n" \
        + claims_table(verdicts, out.parent, suite_path, family) + "\n"
    png = forest_png(verdicts, title)
    if png is not None:
        plot = out.with_name(f"{out.stem}{section.suffix}.png")
        files[plot] = png
        md += f"![claims: effects and 95% intervals]({plot.name})\n\n"
    guide = doc_target(GEOBENCH_DOCS / "claims.md", out.parent)
    return md + (f"Every unit that entered a verdict, and why any was left out: "
                 f"[{csv_path.name}]({csv_path.name})."
                 + (f" How verdicts are computed and what they do not prove: "
                    f"[docs/claims.md]({guide})." if guide else "") + "\n\n")
