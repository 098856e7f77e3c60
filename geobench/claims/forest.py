"""A forest plot of a suite's claims: one row per decided part (and positive control),
grouped by claim, on one shared axis, coloured by verdict, post hoc claims hollow."""

from __future__ import annotations

import math

from geobench.claims.verdicts import DEGENERATE, NOT_IN_PROFILE, Verdict
from geobench.publish.output import figure_bytes

COLOURS = {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#bf8700",
           DEGENERATE: "#6e7781",
           "insufficient": "#8c959f", NOT_IN_PROFILE: "#d0d7de"}
EDGE = 1000.0  # the shared axis ends here; farther intervals (zero width) end in an arrow
ROW_INCHES = 0.18


def forest_points(v: Verdict) -> tuple[float | None, float | None, float | None, float, str]:
    """(effect, low, high, threshold, axis) on the axis a reader compares: the ratio on a log
    axis for ``scale: log`` outside a trend (threshold e^{±margin}), the rate for a rate
    claim (threshold c ± margin), else the difference d (threshold ±margin)."""
    c = v.claim
    edge = c.margin if c.expects_greater else -c.margin
    points = (v.effect, v.ci_low, v.ci_high)
    if c.scale == "log" and c.trend is None:
        return (*(None if x is None else math.exp(x) for x in points), math.exp(edge), "log")
    if v.rate is not None:
        shift = c.threshold
        return (*(None if x is None else x + shift for x in points), shift + edge, "rate")
    return (*points, edge, "linear")


EFFECT_FORMATS = {"rate": ("rate ", "", ".2g"), "log": ("", "×", ".3g"),
                  "linear": ("", "", "+.3g")}
"""Per axis of ``forest_points``: the text before the numbers, before each number, and the
number format."""


def format_effect(v: Verdict) -> str:
    """``effect [low, high]`` on the axis a reader compares (``forest_points``): a log-scale
    effect as a ratio ``×r [×lo, ×hi]``, a rate as the rate itself ``rate r [lo, hi]`` (the
    threshold is in the tested cell)."""
    if v.effect is None:
        return "—"
    effect, low, high, _, axis = forest_points(v)
    prefix, mark, fmt = EFFECT_FORMATS[axis]

    def num(x: float | None) -> str:
        return "—" if x is None else mark + format(x, fmt)

    return f"{prefix}{num(effect)} [{num(low)}, {num(high)}]"


def standardised(v: Verdict) -> tuple[float, float, float] | None:
    """(effect, low, high) as distances from the edge the verdict compares with, in
    half-widths of the 95% interval, positive in the direction the claim expects: with
    s = +1 for ``>`` and -1 for ``<``, margin m and half-width w = (high - low) / 2,
    x = (s·x_d - m) / w for each of effect, low, high on the tested scale (d, log ratio, or
    rate minus c).  A part with enough trial seeds holds when the low end is above 0 and
    fails when the high end is below 0, so one axis serves parts that measure different
    things (an insufficient part, or a claim gated by a control that did not fire, is read
    by its colour).  Positions are clipped at ±``EDGE``, where a zero-width interval off
    the edge goes; None without an interval."""
    if v.effect is None or v.ci_low is None or v.ci_high is None:
        return None
    sign = 1.0 if v.claim.expects_greater else -1.0
    low, high = sorted((sign * v.ci_low - v.claim.margin, sign * v.ci_high - v.claim.margin))
    centre = sign * v.effect - v.claim.margin
    width = (high - low) / 2
    if width <= 0:
        x = 0.0 if centre == 0 else math.copysign(EDGE, centre)
        return x, x, x
    return tuple(max(-EDGE, min(EDGE, x / width)) for x in (centre, low, high))


KIND_MARKS = {"contrast": "‡", "corollary": "⇐"}  # kinds outside the counts, marked in tables


def marks(v: Verdict) -> str:
    """The marks after a claim's verdict or id: † post hoc, ‡ contrast, ⇐ corollary, § a
    positive control that did not fire, ∅ degenerate, ↻ revised after publication."""
    return ("†" if v.posthoc else "") + KIND_MARKS.get(v.claim.kind, "") \
        + ("§" if v.unfired else "") + ("∅" if v.degenerate else "") \
        + ("↻" if v.revised else "")


def forest_rows(verdicts: list[Verdict]) -> tuple[list[tuple[Verdict, Verdict, str]], list[str]]:
    """The rows to draw, (claim, part, label) for each part and control in the profile, and
    the ids of claims (or claim · part) not in the profile."""
    rows, absent = [], []
    for v in verdicts:
        if v.claim.kind == "sanity":
            continue
        parts = [(p, f"part {i}") for i, p in enumerate(v.parts, 1)] or [(v, "")]
        parts += [(p, f"control {k}") for k, p in enumerate(v.controls, 1)]
        kept = [(p, name) for p, name in parts if p.verdict != NOT_IN_PROFILE]
        if not kept:
            absent.append(v.claim.id)
            continue
        absent += [f"{v.claim.id} · {name}" for p, name in parts if p.verdict == NOT_IN_PROFILE]
        for j, (p, name) in enumerate(kept):
            head = v.claim.id + marks(v) if j == 0 else ""
            rows.append((v, p, f"{head} · {name}" if head and name else head or f"· {name}"))
    return rows, absent


def forest_png(verdicts: list[Verdict], title: str) -> bytes | None:
    """The forest plot of ``verdicts`` as PNG bytes (``standardised`` positions on a symlog
    axis, each row's effect [95% CI] and verdict in its own words at the right, claims
    shaded in turn); None when there is nothing to plot."""
    rows, absent = forest_rows(verdicts)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    foot = 0.2 * (1 + len(", ".join(absent)) // 160) if absent else 0.0
    height = ROW_INCHES * len(rows) + 0.95 + foot
    fig, ax = plt.subplots(figsize=(10, height))
    shade, previous = False, None
    for y, (claim, part, _) in enumerate(rows):
        if claim is not previous:
            shade, previous = not shade, claim
        if shade:
            ax.axhspan(y - 0.5, y + 0.5, color="#f6f8fa", zorder=0)
        colour = COLOURS[part.verdict]
        points = standardised(part)
        if points is not None:
            x, lo, hi = points
            hollow = claim.posthoc is not None
            ax.errorbar([x], [y], xerr=[[x - lo], [hi - x]], fmt="o", ms=4, color=colour,
                        mfc="white" if hollow else colour, capsize=2, lw=1.2)
            if abs(x) == EDGE:
                ax.annotate("", (x, y), (x - math.copysign(EDGE * 0.6, x), y),
                            arrowprops={"arrowstyle": "->", "color": colour})
        note = format_effect(part) + "  " + part.verdict
        ax.text(1.01, y, note, transform=ax.get_yaxis_transform(), fontsize=6.5,
                color=colour, va="center")
    ax.axvline(0, color="#57606a", ls="--", lw=1)
    ax.set_xscale("symlog", linthresh=2)
    ax.set_xlim(-EDGE * 1.5, EDGE * 1.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [label for _, _, label in rows], fontsize=6.5)
    ax.tick_params(axis="x", labelsize=6.5)
    ax.set_xlabel("distance from the threshold in half-widths of the 95% interval "
                  "(right: the direction the claim expects; holds when the whole interval "
                  "is right of 0)", fontsize=7)
    ax.set_title(f"{title}: effect and 95% interval against the threshold (dashed); "
                 "† post hoc (hollow), ‡ contrast, ⇐ corollary, § a control did not fire",
                 fontsize=8)
    if absent:
        fig.text(0.01, 0.005, "not in this profile: " + ", ".join(absent), fontsize=6,
                 color="#57606a", va="bottom", wrap=True)
    fig.subplots_adjust(left=0.3, right=0.72, top=1 - 0.35 / height,
                        bottom=(0.6 + foot) / height)
    png = figure_bytes(fig, dpi=110)
    plt.close(fig)
    return png
