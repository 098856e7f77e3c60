"""How many trial seeds a claim needs for its verdict to replicate, planned from its effect on
the exploration seeds (docs/claims.md, "Replication").

Each part is taken to be what its exploration seeds show: per-seed effects d with mean m and
standard deviation s (a rate part: the rate p̂ = k / n).  On a fresh set of n seeds the part
is decided on the side m lies on with probability

- Student-t (and bootstrap, read as t): P(T' > t_{0.975, n−1}) for T' noncentral t with n − 1
  degrees of freedom and noncentrality |δ| √n / s, δ = ±m − margin (1 where s = 0);
- rate: the binomial probability, under p̂, of the k whose exact test (the one the
  Clopper–Pearson interval inverts) rejects at 0.025 on that side.

A claim whose parts all lie on the holds side holds with the product of their
probabilities; one with a part on the fails side fails when any such part fails
(1 − Π(1 − P)).  Its verdict replicates when two independent seed sets both decide it so:
P². ``seeds_needed`` is the smallest n from 3 with P² ≥ ``TARGET``.  This plans raw verdicts
(the ones the ``replicates`` column compares), with the exploration effect taken as the
truth: an optimistic plan where the claims were shaped on those seeds.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps
from tabulate import tabulate

from geobench.claims.stats import ALPHA
from geobench.claims.verdicts import MIN_PAIRS, Verdict

TARGET = 0.8  # the probability that both seed sets decide the same verdict
MAX_SEEDS = 1000  # beyond this a claim is reported as needing more


@dataclass(frozen=True)
class Plan:
    """A claim's replication plan: the verdict its exploration effect points to, the
    probability that two sets of ``seeds`` trial seeds both decide it, and the fewest seeds
    for that probability to reach ``TARGET`` (None: more than ``MAX_SEEDS``)."""

    claim: str
    expected: str
    seeds: int
    replicates: float
    needed: int | None


def _per_seed(part: Verdict) -> list[float]:
    """The part's per-seed values: its d's (a rate part: its seeds' rates), each the mean over
    the seed's units."""
    by_seed: dict[int, list[float]] = {}
    for u in part.units:
        value = u.a if part.ci == "rate" else u.d
        if not u.excluded and value is not None:
            by_seed.setdefault(u.trial_seed, []).append(value)
    return [statistics.fmean(v) for v in by_seed.values()]


def decides(part: Verdict, n: int) -> tuple[bool, float] | None:
    """(whether the part points to holds, the probability that n fresh trial seeds decide
    it on that side), None where its exploration seeds give no effect to plan from."""
    x, claim = _per_seed(part), part.claim
    if len(x) < 2:
        return None
    sign = 1.0 if claim.expects_greater else -1.0
    if part.ci == "rate":
        edge = claim.threshold + sign * claim.margin
        rate = statistics.fmean(x)
        holds = sign * (rate - edge) > 0
        return holds, _rate_power(rate, edge, n, holds == (sign > 0))
    delta = sign * statistics.fmean(x) - claim.margin
    s = statistics.stdev(x)
    if s == 0:
        return delta > 0, 1.0 if delta != 0 else 0.0
    critical = float(sps.t.ppf(1 - ALPHA / 2, n - 1))
    return delta > 0, float(sps.nct.sf(critical, n - 1, abs(delta) * math.sqrt(n) / s))


def _rate_power(rate: float, edge: float, n: int, above: bool) -> float:
    """P, for k ~ Binomial(n, rate), that the exact one-sided test rejects the rate ``edge``
    at 0.025 above it (``above``) or below it."""
    edge, k = min(max(edge, 0.0), 1.0), np.arange(n + 1)
    p = sps.binom.sf(k - 1, n, edge) if above else sps.binom.cdf(k, n, edge)
    return float(sps.binom.pmf(k, n, rate)[p < ALPHA / 2].sum())


def claim_power(v: Verdict, n: int) -> tuple[str, float] | None:
    """The verdict ``v``'s exploration effect points to and the probability that n fresh
    seeds decide it; None where a part gives nothing to plan from."""
    found = [decides(p, n) for p in (v.parts or [v])]
    if any(f is None for f in found):
        return None
    if all(h for h, _ in found):  # type: ignore[misc]
        return "holds", math.prod(p for _, p in found)  # type: ignore[misc]
    return "fails", 1 - math.prod(1 - p for h, p in found if not h)  # type: ignore[misc]


def plan(v: Verdict, seeds: int) -> Plan | None:
    """``v``'s replication plan with ``seeds`` trial seeds a set (``Plan``)."""
    at = claim_power(v, seeds)
    if at is None:
        return None
    needed = next((n for n in range(MIN_PAIRS, MAX_SEEDS + 1)
                   if (claim_power(v, n) or ("", 0.0))[1] ** 2 >= TARGET), None)
    return Plan(v.claim.id, at[0], seeds, at[1] ** 2, needed)


def plan_table(verdicts: list[Verdict], seeds: int) -> str:
    """The plan of every claim of ``kind: claim`` as a table: the verdict its exploration
    effect points to, P(replicates) with ``seeds`` a set, and the seeds it needs."""
    rows = []
    for v in verdicts:
        if v.claim.kind != "claim":
            continue
        found = plan(v, seeds)
        rows.append([v.claim.id, v.verdict] + (["—", "—", "no effect to plan from"]
                                                if found is None else [
            found.expected, f"{found.replicates:.2f}",
            str(found.needed) if found.needed is not None else f"> {MAX_SEEDS}"]))
    return tabulate(rows, headers=["claim", "exploration verdict", "points to",
                                   f"P(replicates), {seeds} seeds",
                                   f"seeds needed (P ≥ {TARGET})"], tablefmt="github")
