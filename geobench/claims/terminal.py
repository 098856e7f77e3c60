"""The claims table for a terminal: at most ``WIDTH`` columns, one row per claim and one
numbered row per part of a conjunction, each with its own values; the claims not in the
profile are named in a line under it; the statements are the markdown page's (``geobench
claims --wide``)."""

from __future__ import annotations

import re
import textwrap

from tabulate import tabulate

from geobench.claims.claims_table import (
    CHECKS_NOTE,
    UNFIRED_NOTE,
    checks_table,
    control_text,
    degenerate_notes,
    format_effect,
    format_p,
    part_text,
    posthoc_notes,
    revised_notes,
    summary_line,
    tested_claims,
)
from geobench.claims.family import PaperFamily
from geobench.claims.forest import marks
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict

WIDTH = 120
COLUMNS = {"claim": 31, "tested": 28, "effect [95% CI]": 22, "n": 6, "p": 7,
           "verdict / Holm": 16}
"""Each column's most characters; with tabulate's two spaces between columns the table
is ``WIDTH`` wide at most."""
N_NOTE = "n: trial seeds (units, where a seed gives several; excluded: x, missing: m)"


def _plain(text: str) -> str:
    return text.replace("**", "").replace("`", "")


def _claim_id(text: str, width: int = COLUMNS["claim"]) -> str:
    """A claim id broken after underscores into lines of at most ``width`` characters."""
    lines = [""]
    for piece in re.findall(r"[^_]*_|[^_]+$", text):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines)


def _n(v: Verdict) -> str:
    return str(v.n) + (f" ({v.pairs})" if v.pairs != v.n else "") \
        + (f" {v.excluded}x" if v.excluded else "") + (f" {v.missing}m" if v.missing else "")


def _verdicts(v: Verdict) -> str:
    if v.verdict == NOT_IN_PROFILE:
        return v.verdict
    return f"{v.verdict}{marks(v)} / {v.verdict_holm or '—'}"


def terminal_table(verdicts: list[Verdict], family: PaperFamily | None = None) -> str:
    """The table, then what n counts, the post hoc notes, the claims not in this profile,
    the summary line, the paper's family (its Holm verdicts in ``--json``) and the sanity
    checks, as plain text."""
    rows = []
    for v in (v for v in tested_claims(verdicts) if v.verdict != NOT_IN_PROFILE):
        c = v.claim
        if not v.parts:
            rows.append([_claim_id(c.id), _plain(part_text(c, c)), format_effect(v), _n(v),
                         format_p(v.p_value), _verdicts(v)])
        else:
            rows.append([_claim_id(c.id), f"all {len(v.parts)} parts:", "", "",
                         format_p(v.p_value), _verdicts(v)])
        rows += [[f"part {i}", _plain(part_text(p.claim, c)), format_effect(p), _n(p),
                  format_p(p.p_value), p.verdict] for i, p in enumerate(v.parts, 1)]
        rows += [[f"control {k}", _plain(part_text(p.claim, c)), format_effect(p), _n(p),
                  format_p(p.p_value), control_text(p)] for k, p in enumerate(v.controls, 1)]
    table = tabulate(rows, headers=list(COLUMNS), maxcolwidths=list(COLUMNS.values()),
                     disable_numparse=True)
    absent = [v.claim.id for v in verdicts if v.verdict == NOT_IN_PROFILE]
    notes = [N_NOTE] + posthoc_notes(verdicts, code="") + degenerate_notes(verdicts, code="") \
        + revised_notes(verdicts, code="") \
        + ([UNFIRED_NOTE] if any(v.unfired for v in verdicts) else []) \
        + ([f"{NOT_IN_PROFILE} (no cell of it selected): {', '.join(absent)}"] if absent else []) \
        + ["", _plain(summary_line(verdicts))] \
        + ([_plain(family.note(verdicts))] if family else [])
    checks = [[_plain(c) for c in row] for row in checks_table(
        [v for v in verdicts if v.verdict != NOT_IN_PROFILE], code="")]
    text = "\n".join([table, *(textwrap.fill(n, WIDTH) for n in notes)]) + "\n"
    if checks:
        text += "\n" + textwrap.fill(CHECKS_NOTE, WIDTH) + "\n" + tabulate(
            checks, headers=["check", "tested", "effect [95% CI]", "n", "result"],
            maxcolwidths=[32, 40, 22, 8, 12], disable_numparse=True) + "\n"
    return text
