"""A forest plot of a suite's claims: every claim and part as its effect and 95% interval
against the threshold it must clear, coloured by verdict, post hoc claims marked."""

from __future__ import annotations

import math

from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict
from geobench.publish.output import figure_bytes

COLOURS = {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#bf8700",
           "insufficient": "#8c959f", NOT_IN_PROFILE: "#d0d7de"}


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


def forest_png(verdicts: list[Verdict], title: str) -> bytes | None:
    """The forest plot of ``verdicts`` as PNG bytes (one panel per part, each on its own
    axis, since the parts measure different things); None when there is nothing to plot."""
    rows = [(v, p, i) for v in verdicts if v.claim.kind != "sanity"
            for i, p in enumerate(v.parts or [v], 1)]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 0.55 * len(rows) + 0.9), squeeze=False)
    for ax, (claim, part, i) in zip(axes[:, 0], rows):
        effect, low, high, threshold, axis = forest_points(part)
        colour = COLOURS[part.verdict]
        if axis == "log":
            ax.set_xscale("log")
        ax.axvline(threshold, color="#57606a", ls="--", lw=1)
        if effect is not None:
            lo, hi = (effect if x is None else x for x in (low, high))
            hollow = claim.posthoc is not None
            ax.errorbar([effect], [0], xerr=[[effect - lo], [hi - effect]], fmt="o",
                        color=colour, mfc="white" if hollow else colour, capsize=3)
        label = claim.claim.id + ("†" if claim.posthoc else "") \
            + ("‡" if claim.claim.kind == "contrast" else "") \
            + (f" · {i}" if claim.parts else "")
        ax.set_yticks([0], [label], fontsize=7)
        ax.tick_params(axis="x", which="both", labelsize=6)
        ax.xaxis.get_offset_text().set_fontsize(6)
        if axis == "rate":
            ax.set_xlim(-0.03, 1.03)
        ax.text(1.01, 0.5, part.verdict + (f" ({axis})" if axis != "linear" else ""),
                transform=ax.transAxes, fontsize=7, color=colour, va="center")
    axes[0, 0].set_title(f"{title}: effect and 95% CI against the threshold (dashed); "
                         "† post hoc (hollow)", fontsize=8)
    fig.tight_layout()
    png = figure_bytes(fig, dpi=110)
    plt.close(fig)
    return png
