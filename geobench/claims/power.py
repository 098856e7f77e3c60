"""Whether a claim can be decided at all: the smallest p-value its number of trial seeds can
reach in a profile, against Holm's strictest threshold in that profile's family.

A part tested by a rate (Clopper–Pearson, exact binomial) with n trial seeds reaches at best
k = n successes for ``> c`` or k = 0 for ``< c``: two-sided p = 2 e^n or 2 (1 − e)^n, with
e = c ± margin the rate it must clear.  A part tested by Student-t or the bootstrap can reach
any p > 0 with n ≥ 3 trial seeds (identical values on one side), and none with fewer.  A
conjunction's p_holds is its largest part's, so every part must reach it.  The family of a
profile is every claim of ``kind: claim`` that the profile can test, less those declared
post hoc where it decides on exploration seeds (m claims); Holm rejects first at α / m, so a
claim whose best p is not below α / m can never be decided there.  The seeds counted are
those that decide the profile's verdicts: its confirmation seeds where it declares them,
else its exploration seeds.  The paper's family is every such claim of the paper's suites
in one folder that declare the profile, less those quoted per suite (``per_suite``): the
family its pages tell readers to quote (docs/claims.md, "Families").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from geobench.claims.forms import form_of
from geobench.claims.select import selected_cells
from geobench.claims.stats import ALPHA
from geobench.claims.values import declared
from geobench.claims.verdicts import MIN_PAIRS
from geobench.contract.registry import Registry
from geobench.records import Cell
from geobench.suite import LoadedSuite
from geobench.suite.schema import Claim
from geobench.suite.seeds import confirming, decided_cells


@dataclass(frozen=True)
class Power:
    """The best a part can do with ``seeds`` trial seeds: its smallest two-sided p-value and
    how it gets there, the size of its Holm family, and the fewest trial seeds that would
    reach the family's strictest threshold."""

    seeds: int
    best_p: float
    how: str
    family: int
    needed: int

    @property
    def threshold(self) -> float:
        """Holm's first threshold in a family of this size: α / m."""
        return ALPHA / self.family

    @property
    def decidable(self) -> bool:
        return self.best_p < self.threshold


def rate_edge(part: Claim) -> float:
    """The rate a rate part must clear: c + margin (``> c``) or c − margin (``< c``)."""
    return part.threshold + (part.margin if part.expects_greater else -part.margin)


def part_power(part: Claim, seeds: int, rate: bool, family: int) -> Power:
    """``Power`` of ``part`` with ``seeds`` trial seeds in a Holm family of ``family``
    claims, tested as a rate or not."""
    if not rate:
        best = 0.0 if seeds >= MIN_PAIRS else 1.0
        return Power(seeds, best, f"{MIN_PAIRS} or more trial seeds on one side", family,
                     MIN_PAIRS)
    q = rate_edge(part) if part.expects_greater else 1 - rate_edge(part)
    k = seeds if part.expects_greater else 0
    threshold = ALPHA / family
    needed = max(MIN_PAIRS, math.floor(math.log(threshold / 2) / math.log(q)) + 1)
    return Power(seeds, min(1.0, 2 * q ** seeds), f"rate {k} of {seeds} against "
                 f"{rate_edge(part):g}", family, needed)


def profile_family(loaded: LoadedSuite, profile: str, cells: list[Cell]) -> list[Claim]:
    """The claims of ``profile``'s Holm family: ``kind: claim``, not declared post hoc where
    the profile decides on exploration seeds, every part testable on the deciding cells."""
    decided = decided_cells(loaded, profile, cells)
    blind = confirming(loaded, profile)
    return [c for c in loaded.suite.claims if c.kind == "claim"
            and (c.posthoc is None or blind)
            and all(form_of(p).decidable(loaded.suite, p, selected_cells(p, decided))
                    for p in c.parts)]


def profile_powers(loaded: LoadedSuite, registry: Registry, profile: str,
                   cells: list[Cell], others: int | None = None) -> dict[str, list[Power]]:
    """Claim id -> the ``Power`` of each part, for every claim of ``profile``'s family; with
    ``others``, over the paper's family instead: the suite's claims not quoted per suite
    and ``others`` claims of the paper's other suites."""
    decided = decided_cells(loaded, profile, cells)
    family = profile_family(loaded, profile, cells)
    if others is not None:
        family = [c for c in family if c.per_suite is None]
    size = len(family) + (others or 0)
    out = {}
    for claim in family:
        powers = []
        for part in claim.parts:
            chosen = [c for c, _ in selected_cells(part, decided).values()]
            doc = declared(registry, chosen, part.metric)
            rate = part.interval(doc is not None and doc.binary) == "rate"
            seeds = len({c.trial_seed for c in chosen})
            powers.append(part_power(part, seeds, rate, size))
        out[claim.id] = powers
    return out
