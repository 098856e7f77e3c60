"""Claims of a suite tested on its stored cells: effect, 95% interval, n, p-value and a
verdict, raw and after Holm's multiplicity correction.

Each part of a claim is read by its form (``claims.forms``: one-sample, ``compare`` by key,
arm or series statistic, ``trend``) into units, each with its ``d`` or the reason it was left
out (``Verdict.units``).  With ``scale: log`` differences become log ratios (``log a - log
b``, ``log value - log c``; a trend fits the log values); units with a non-positive value
are excluded.  The unit of replication
is the trial seed: the ``d`` of one trial seed (several when other grid keys vary) are
averaged, since cells of one trial seed share data, views and initial weights.  The effect
is the mean over trial seeds; its 95% interval, over trial seeds, is Student-t (``ci: t``),
a percentile bootstrap (``ci: bootstrap``) or, for one-sample claims on 0/1 outcomes
(``ci: rate``, the default on a field whose unit is ``0/1``), Clopper–Pearson: each trial
seed's rate over its units first, then k = the sum of those rates out of n trial seeds (a
fractional k, where a seed's units disagree, enters the beta quantiles as is; its coverage
stays ≥ 95%, checked exactly for two runs a seed).  The claim is ``d > margin`` (``>`` forms) or
``d < -margin`` (``<`` forms):

- ``holds``: the whole interval lies on the claimed side of the margin;
- ``fails``: the whole interval lies on the other side;
- ``inconclusive``: the interval contains the margin;
- ``insufficient``: fewer than 3 trial seeds with a value;
- ``not in this profile``: the profile has no unit of the claim (of some part): no cell its
  ``where`` selects, or no selected partner cell for any ``compare: {key}`` pair (such
  units are marked ``absent:``);
- ``degenerate``: a tested part's trial seeds give no test (``zero_spread``): their ``d``
  are one number, so the interval has no width; the claim stays outside the counts and
  Holm's family, like a sanity check (its parts keep their own verdicts).

The p-value is two-sided, 2 min(p_holds, p_fails), from the one-sided tests the interval
inverts (the t distribution's, the bootstrap shares, or the exact binomial's), so the raw
verdict of a claim without ``also`` is decided exactly when p < 0.05.  A claim with ``also``
conditions is tested part by part (each part on the claim's cells or its own ``where``); it
``fails`` if a part fails (a failing part is never hidden), else is ``not in this profile``
if a part is, else ``insufficient`` if a part is, else ``holds`` if every part holds, else
``inconclusive``;
its p_holds is the largest of its parts' (an intersection-union test) and its p_fails k
times the smallest of its k parts' (Bonferroni inside the claim), so its raw ``fails``
(uncorrected, as one failing part) may come with p ≥ 0.05, which Holm's verdict then reads
as ``inconclusive``.  Holm's step-down runs over the suite's pre-registered claims with a
p-value (family-wise α = 0.05): a claim Holm does not reject reads ``inconclusive``; post
hoc claims, declared so or found so by ``claims.registration``, are left out, and so are
sanity checks (``kind: sanity``: they hold by construction), contrasts the paper does not
make (``kind: contrast``) and corollaries of counted claims (``kind: corollary``).
``RULES`` numbers these rules; a page records the number it was decided under
(docs/claims.md, "Verdict rules").
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from geobench.claims.forms import form_of
from geobench.claims.registration import seen_before
from geobench.claims.select import selected_cells
from geobench.claims.stats import (
    binomial_p_values,
    bootstrap_p_values,
    clopper_pearson,
    holm,
    interval,
    t_p_values,
)
from geobench.claims.units import PartUnits, Unit
from geobench.claims.values import StoredValues, declared
from geobench.contract.registry import Registry
from geobench.records import Cell
from geobench.suite import LoadedSuite
from geobench.suite.schema import Claim

MIN_PAIRS = 3
NOT_IN_PROFILE = "not in this profile"
DEGENERATE = "degenerate"
ZERO_SPREAD = 1e-12  # float64 rounding of O(1) values; no shipped claim spreads below 1e-4
RULES = 2  # 1: "not in this profile" outranked "fails", and nothing was degenerate
PART_KEYS = ("ci", "effect", "ci_low", "ci_high", "n", "pairs", "excluded", "missing",
             "p_holds", "p_fails", "p_value", "verdict")


@dataclass
class Verdict:
    """A claim's effect, interval, counts, p-value and verdicts; with ``also``, those of its
    main part, the combined verdict and every part's own verdict in ``parts`` (the main part
    first).  ``verdict_holm`` is None for a post hoc claim (outside the family)."""

    claim: Claim
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    pairs: int
    excluded: int
    missing: int
    verdict: str
    ci: str = "t"  # the interval used: t, bootstrap or rate
    p_holds: float | None = None
    p_fails: float | None = None
    units: list[Unit] = field(default_factory=list)
    rate: tuple[float, int] | None = None  # (k, n) of a rate claim
    parts: list[Verdict] = field(default_factory=list)
    verdict_holm: str | None = None
    declared: str | None = None  # the suite's ``posthoc`` reason, where it applies
    seen: str | None = None  # why its data predate its definition (claims.registration)
    controls: list[Verdict] = field(default_factory=list)  # its positive controls
    verdict_paper: str | None = None  # Holm's over the paper's family (claims.family)
    scales: dict[str, str] = field(default_factory=dict)  # other profile -> raw verdict
    degenerate: str | None = None  # why its units give no test (``zero_spread``)
    revised: str | None = None  # why a deciding cell changed after publication (mark_revised)
    revised_from: str | None = None  # its verdict as first published, where known
    replicated: str | None = None  # its raw verdict on the replication seeds, where run
    replicated_posthoc: str | None = None  # why that verdict is post hoc (None: it is not)

    @property
    def unfired(self) -> bool:
        """A positive control of the claim did not hold where the claim is tested: its
        absence says nothing (a claim not in the profile has nothing to gate)."""
        return self.verdict != NOT_IN_PROFILE and any(c.verdict != "holds"
                                                      for c in self.controls)

    @property
    def counted(self) -> bool:
        """A pre-registered claim of ``kind: claim`` with a test: counted, and in Holm's
        family."""
        return self.claim.kind == "claim" and self.posthoc is None \
            and self.degenerate is None and self.revised is None

    @property
    def replicates(self) -> bool | None:
        """Whether the replication seeds give the same raw verdict; None where they did not
        run or decide it post hoc, or the claim is not in this profile (docs/claims.md,
        "Replication")."""
        if self.replicated is None or self.replicated_posthoc is not None \
                or self.verdict == NOT_IN_PROFILE:
            return None
        return self.replicated == self.verdict

    @property
    def posthoc(self) -> str | None:
        """Why the claim is post hoc: the reason the suite declares, else the automatic one
        (``seen``); None when it is pre-registered."""
        return self.declared or self.seen

    @property
    def p_value(self) -> float | None:
        """Two-sided: 2 min(p_holds, p_fails), at most 1; None when untested."""
        if self.p_holds is None or self.p_fails is None:
            return None
        return min(1.0, 2 * min(self.p_holds, self.p_fails))

    def as_json(self) -> dict[str, Any]:
        c = self.claim
        out = {"id": c.id, "source": c.source, "statement": c.statement, "metric": c.metric,
               "expect": c.expect, **_trend_json(c), "scale": c.scale,
               "margin": c.margin, "ci": self.ci,
               "kind": c.kind, "posthoc": self.posthoc, "degenerate": self.degenerate,
               "revised": self.revised, "revised_from": self.revised_from,
               "posthoc_declared": self.declared is not None,
               "effect": self.effect, "ci_low": self.ci_low,
               "ci_high": self.ci_high, "n": self.n, "pairs": self.pairs,
               "excluded": self.excluded, "missing": self.missing, "p_holds": self.p_holds,
               "p_fails": self.p_fails, "p_value": self.p_value, "verdict": self.verdict,
               "verdict_holm": self.verdict_holm, "verdict_paper": self.verdict_paper,
               "scales": self.scales}
        keys = ("metric", "stat", "expect", "scale", "margin", "where")
        if self.controls:
            out["controls"] = [{**{k: getattr(p.claim, k) for k in keys},
                                **{k: getattr(p, k) for k in PART_KEYS}}
                               for p in self.controls]
        if self.parts:
            out["parts"] = [{**{k: getattr(p.claim, k) for k in keys}, **_trend_json(p.claim),
                             **{k: getattr(p, k) for k in PART_KEYS}} for p in self.parts]
        return out


def _trend_json(claim: Claim) -> dict[str, Any]:
    """``{"trend": {key, x, fit}}`` for a trend claim (part), else nothing."""
    return {} if claim.trend is None else {"trend": claim.trend.model_dump()}


def evaluate(loaded: LoadedSuite, cells: list[Cell], values: StoredValues,
             registry: Registry, confirming: bool = False) -> list[Verdict]:
    """The verdict of every claim of the suite on ``cells``, with Holm's over the family of
    pre-registered claims (``claims.registration`` marks the others post hoc); ``registry``
    tells which metric fields are 0/1 outcomes (``ci`` rate by default).  A claim's declared
    ``posthoc`` speaks of the seeds that shaped it; on a profile's confirmation seeds
    (``confirming``) it does not apply, and the store's record alone decides."""
    verdicts = [evaluate_claim(c, loaded, cells, values, registry)
                for c in loaded.suite.claims]
    for v in verdicts:
        v.declared = None if confirming else v.claim.posthoc
        v.seen = None if v.declared else seen_before(v.claim, cells, values)
    apply_holm(verdicts)
    return verdicts


def mark_revised(verdicts: list[Verdict], cells: set[str], before: dict[str, str]) -> None:
    """Mark revised every claim whose units (parts and controls) read one of ``cells``,
    confirmation cells whose values changed after a page published them, with ``before``
    (claim id -> its verdict as first published) where known: its data are not those it
    was declared blind on any more, so it leaves the counts and Holm's family."""
    for v in verdicts:
        read = {c for p in [*(v.parts or [v]), *v.controls] for u in p.units
                for c in (u.cell, u.cell_b) if c in cells}
        if read:
            v.revised = (f"{len(read)} of the cells it reads changed after the page "
                         f"published them: {', '.join(sorted(read)[:3])}"
                         + (", …" if len(read) > 3 else ""))
            v.revised_from = before.get(v.claim.id)


def attach_replication(verdicts: list[Verdict], replicated: list[Verdict]) -> None:
    """Set each verdict's ``replicated`` (and ``replicated_posthoc``) from the same claim's
    verdict on the replication seeds, ``replicated`` in the same order."""
    for v, w in zip(verdicts, replicated, strict=True):
        v.replicated, v.replicated_posthoc = w.verdict, w.posthoc


def apply_holm(verdicts: list[Verdict]) -> None:
    """Set ``verdict_holm`` of every claim to its ``holm_verdicts`` over ``verdicts``."""
    for v, h in zip(verdicts, holm_verdicts(verdicts)):
        v.verdict_holm = h


def holm_verdicts(verdicts: list[Verdict]) -> list[str | None]:
    """Holm–Bonferroni over the counted claims (pre-registered, ``kind: claim``) with a
    p-value: a rejected claim keeps its raw verdict, any other reads ``inconclusive`` (or
    stays ``insufficient`` / ``not in this profile``); None for a claim outside the
    family."""
    family = [v for v in verdicts if v.counted and v.p_value is not None]
    rejected = dict(zip(map(id, family), holm([v.p_value for v in family])))
    out: list[str | None] = []
    for v in verdicts:
        if not v.counted:
            out.append(None)
        elif v.verdict in ("insufficient", NOT_IN_PROFILE) or v.p_value is None:
            out.append(v.verdict if v.verdict == NOT_IN_PROFILE else "insufficient")
        else:
            decided = rejected[id(v)] and v.verdict in ("holds", "fails")
            out.append(v.verdict if decided else "inconclusive")
    return out


def evaluate_claim(claim: Claim, loaded: LoadedSuite, cells: list[Cell],
                   values: StoredValues, registry: Registry) -> Verdict:
    """The verdict of ``claim``; with ``also``, every part's and the combined one; with
    ``control``, each control's, and ``holds`` turns ``inconclusive`` unless every control
    holds (an absence whose measurement never fires where it must says nothing); a claim
    (not a sanity check) with a part of zero spread reads ``degenerate``."""
    verdict = _conjunction(claim, loaded, cells, values, registry)
    verdict.controls = [_evaluate_part(c, loaded, cells, values, registry)
                        for c in claim.controls]
    if verdict.verdict == "holds" and verdict.unfired:
        verdict.verdict = "inconclusive"
    if claim.kind != "sanity" and verdict.verdict != NOT_IN_PROFILE:
        parts = verdict.parts or [verdict]
        verdict.degenerate = next(
            (f"{'' if len(parts) == 1 else f'part {i}: '}{why}"
             for i, p in enumerate(parts, 1) if (why := zero_spread(p)) is not None), None)
        if verdict.degenerate is not None:
            verdict.verdict = DEGENERATE
    return verdict


def zero_spread(part: Verdict) -> str | None:
    """Why a part's units give no test, or None: its trial seeds' mean ``d`` (3 or more) have
    a standard deviation of at most ``ZERO_SPREAD`` in the tested scale, so the interval has
    no width and the p-value is 0 or 1 whatever the claim.  A rate is never degenerate:
    outcomes that agree are its evidence, and Clopper–Pearson's interval keeps its width."""
    if part.ci == "rate" or part.n < MIN_PAIRS:
        return None
    seeds: dict[int, list[float]] = {}
    for u in part.units:
        if u.d is not None:
            seeds.setdefault(u.trial_seed, []).append(u.d)
    d = [sum(x) / len(x) for x in seeds.values()]
    if statistics.stdev(d) > ZERO_SPREAD:
        return None
    read = {(u.a, u.b) for u in part.units if u.d is not None}
    a, b = read.pop() if len(read) == 1 else (None, None)
    same = f" (a = {a:.3g}, b = {b:.3g} in every unit)" if a is not None else ""
    return f"zero spread: every trial seed's d is {d[0]:.3g}{same}"


def _conjunction(claim: Claim, loaded: LoadedSuite, cells: list[Cell],
                 values: StoredValues, registry: Registry) -> Verdict:
    if not claim.also:
        return _evaluate_part(claim, loaded, cells, values, registry)
    parts = [_evaluate_part(p, loaded, cells, values, registry) for p in claim.parts]
    verdict = combined([p.verdict for p in parts])
    p_holds, p_fails = conjunction_p([(p.p_holds, p.p_fails) for p in parts])
    untested = verdict in ("insufficient", NOT_IN_PROFILE)
    return replace(parts[0], claim=claim, verdict=verdict, parts=parts,
                   p_holds=None if untested else p_holds,
                   p_fails=None if untested else p_fails)


def conjunction_p(parts: list[tuple[float | None, float | None]]) -> tuple[float, float]:
    """(p_holds, p_fails) of a conjunction from its k parts' (an untested part: None):
    p_holds is the largest part's (intersection–union: it holds only if every part does; an
    untested part counts 1), p_fails k times the smallest tested part's, at most 1
    (Bonferroni: it fails if any part does)."""
    p_holds = max(1.0 if h is None else h for h, _ in parts)
    tested = [f for _, f in parts if f is not None]
    return p_holds, (min(1.0, len(parts) * min(tested)) if tested else 1.0)


def combined(verdicts: list[str]) -> str:
    """``fails`` if any part fails (one refuted part refutes the conjunction, whatever the
    others), else ``not in this profile`` if any part is (the profile cannot test the
    claim), else ``insufficient`` if any part is, else ``holds`` if every part holds, else
    ``inconclusive``."""
    for worst in ("fails", NOT_IN_PROFILE, "insufficient"):
        if worst in verdicts:
            return worst
    return "holds" if all(v == "holds" for v in verdicts) else "inconclusive"


def _evaluate_part(claim: Claim, loaded: LoadedSuite, cells: list[Cell],
                   values: StoredValues, registry: Registry) -> Verdict:
    doc = declared(registry, cells, claim.metric)
    method = claim.interval(doc is not None and doc.binary)
    part_units = PartUnits(claim, values, method == "rate", doc is not None and doc.censored)
    form_of(claim).collect_units(part_units, loaded.suite, selected_cells(claim, cells))
    return _verdict(claim, part_units, method)


def _verdict(claim: Claim, part_units: PartUnits, method: str) -> Verdict:
    seeds = part_units.per_seed()
    units = part_units.units
    n, pairs = len(seeds), sum(len(v) for v in seeds.values())
    missing = sum(u.missing for u in units)
    present = any(not u.absent for u in units)
    base = Verdict(claim, None, None, None, n, pairs, len(units) - pairs - missing, missing,
                   "insufficient" if present else NOT_IN_PROFILE, method, units=units)
    if n == 0:
        return base
    sign = 1.0 if claim.expects_greater else -1.0
    edge = sign * claim.margin  # d must be beyond this
    if method == "rate":
        k = sum(sum(u.a for u in us) / len(us) for us in seeds.values())  # seed rates' sum
        low, high = clopper_pearson(k, n)
        c = claim.threshold
        effect, low, high = k / n - c, low - c, high - c
        base.rate = (k, n)
    else:
        d = [sum(u.d for u in us) / len(us) for us in seeds.values()]
        effect, low, high = interval(d, method)
    clean = [None if math.isnan(x) else x for x in (low, high)]
    base.effect, base.ci_low, base.ci_high = effect, clean[0], clean[1]
    if n < MIN_PAIRS or clean[0] is None:
        return base
    if method == "rate":
        above, below = binomial_p_values(k, n, c + edge)
    else:
        above, below = (t_p_values if method == "t" else bootstrap_p_values)(d, edge)
    lo, hi = sorted((sign * low, sign * high))
    base.verdict = ("holds" if lo > claim.margin else "fails" if hi < claim.margin
                    else "inconclusive")
    base.p_holds, base.p_fails = (above, below) if sign > 0 else (below, above)
    return base
