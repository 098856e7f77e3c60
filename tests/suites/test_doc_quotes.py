"""Every effect a paper doc quotes for a claim is that claim's effect on a published page, as
the page prints it: ``effect [low, high]`` in the page's units (×ratios for claims on a log
scale, differences otherwise), for the claim or one of its parts or controls.  A quote is a
``×1.38 [1.24, 1.52]``-shaped figure in a paragraph, list item or table row, attributed to
the last claim id (in backticks) before it there.  The docs listed are those whose pages
have been republished since their claims were reviewed (docs/claims_review.md)."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ["mirror_flow.md"]
NUMBER = r"×?[-+−]?\d[\d.]*(?:e[-+]?\d+)?"
EFFECT = re.compile(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\]")
CLAIM = re.compile(r"`([A-Za-z0-9_]+)`")


def published_effects() -> dict[str, set[str]]:
    """Claim id -> every effect text a published page prints for it, its parts or controls."""
    found: dict[str, set[str]] = {}
    for record in (ROOT / "leaderboards").glob("*.json"):
        for section in json.loads(record.read_text())["claims"]:
            for claim in section["claims"]:
                texts = found.setdefault(claim["id"], set())
                for row in [claim, *claim["parts"], *claim["controls"]]:
                    if row.get("effect_text"):
                        texts.add(row["effect_text"].replace("−", "-"))
    return found


def quotes(text: str, claims: set[str]) -> list[tuple[str, str]]:
    """(claim id, quoted effect) for each attributable quote of ``text``."""
    found = []
    for block in re.split(r"\n\s*\n|\n(?=\|)|\n(?=\s*- )", text):
        for m in EFFECT.finditer(block):
            named = [c[1] for c in CLAIM.finditer(block[:m.start()]) if c[1] in claims]
            if named:
                found.append((named[-1], m[0].replace("−", "-")))
    return found


@pytest.mark.parametrize("doc", CHECKED)
def test_every_effect_a_doc_quotes_is_its_page_figure(doc):
    effects = published_effects()
    quoted = quotes((ROOT / "docs" / doc).read_text(), set(effects))
    assert quoted, f"{doc} quotes no effect"
    wrong = [f"{claim}: {q}" for claim, q in quoted if q not in effects[claim]]
    assert wrong == [], f"{doc} quotes effects no page prints"


def test_a_stale_quote_is_found_and_a_page_figure_passes():
    effects = {"p2_x": {"×3.98 [×3.47, ×4.58]"}}
    text = ("The ratio of `p2_x` is ×3.98 [×3.47, ×4.58].\n\n"
            "- `p2_x`: ×1.38 [1.24, 1.52] over 2\n"
            "| `p2_x` | ×3.98 [×3.47, ×4.58] | holds |\n")
    got = quotes(text, set(effects))
    assert got == [("p2_x", "×3.98 [×3.47, ×4.58]"), ("p2_x", "×1.38 [1.24, 1.52]"),
                   ("p2_x", "×3.98 [×3.47, ×4.58]")]
    assert [q for c, q in got if q not in effects[c]] == ["×1.38 [1.24, 1.52]"]
