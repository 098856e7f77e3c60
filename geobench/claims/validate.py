"""A suite's claims checked once its profiles are expanded: the keys and arms each part
names, its metric measured in every profile with a field the metric declares, a rate that
data can decide, every ``where`` able to match, the form's own keys, a profile that holds a
unit of every part, and in every profile enough trial seeds to decide it (``power``).
``checked_profiles`` is every profile's cells with the claims checked
(``geobench.study.Study`` reads it once per command).
Each problem is one line through ``loaded.fail``."""

from __future__ import annotations

from typing import Any

from geobench.claims.forms import form_of
from geobench.claims.power import Power, profile_powers
from geobench.claims.select import selected_cells
from geobench.contract.param_models import FieldDoc
from geobench.contract.registry import Registry
from geobench.records import SINGLE_ARM, TRAIN_LOSS_KEY, Cell, parse_metric_key
from geobench.suite import CELL_LIMIT, LoadedSuite
from geobench.suite.checks import check_key, check_result_key, measured
from geobench.suite.expand import validate_suite
from geobench.suite.filters import Checking, check_where
from geobench.suite.load import Loc
from geobench.suite.problems import Problems
from geobench.suite.schema import Claim


def checked_profiles(loaded: LoadedSuite, registry: Registry,
                     cell_limit: int = CELL_LIMIT) -> dict[str, list[Cell]]:
    """Every profile's cells (``validate_suite``), with the claims checked on them; where
    the profiles have problems, they are raised with those of the names each claim uses
    (which need no cell)."""
    problems = Problems()
    profiles: dict[str, list[Cell]] = {}
    with problems.check():
        profiles = validate_suite(loaded, registry, cell_limit)
    with problems.check():
        check_names(loaded)
    problems.raise_found()
    check_claims(loaded, registry, profiles)
    return profiles


def check_claims(loaded: LoadedSuite, registry: Registry,
                 profiles: dict[str, list[Cell]]) -> None:
    """Every claim of the suite against every profile's cells, as the module says; the
    problems of each claim at once (its first), then the power of every profile's family
    once every claim is sound."""
    problems, checking = Problems(), Checking(loaded, profiles)
    specs = {name: measured(cells) for name, cells in profiles.items()}
    for i, claim in enumerate(loaded.suite.claims):
        with problems.check():  # each claim's problem, whatever the others'
            _check_claim_names(loaded, i, claim)
            for name, measures in specs.items():
                _check_metrics(loaded, registry, measures, name, i, claim)
            for at, part, own in _tested(claim):
                loc, what = ("claims", i) + at, f"claim {claim.id!r}"
                for where_at, where in _alternatives(loc, own):
                    check_where(checking, where_at, what, where)
                form_of(part).check(checking, loc, what, part)
            _check_decidable(loaded, i, claim, profiles)
    problems.raise_found()
    for name, cells in profiles.items():
        _check_power(loaded, registry, name, cells)


def _tested(claim: Claim) -> list[tuple[Loc, Claim, Any]]:
    """(location inside the claim, part or control, its written ``where``) of ``claim``."""
    parts = [(("also", j - 1) if j else (), part, claim.also[j - 1].where if j
              else claim.where) for j, part in enumerate(claim.parts)]
    return parts + [(("control", k), control, claim.control[k].where)
                    for k, control in enumerate(claim.controls)]


def _alternatives(loc: Loc, where: Any) -> list[tuple[Loc, dict[str, Any]]]:
    """Each alternative of a written ``where`` with its location (none for None)."""
    if where is None:
        return []
    if isinstance(where, dict):
        return [(loc + ("where",), where)]
    return [(loc + ("where", k), w) for k, w in enumerate(where)]


def check_names(loaded: LoadedSuite) -> None:
    """Every key a claim names is a run-spec key, and every arm it names exists (every
    claim's problem at once)."""
    problems = Problems()
    for i, claim in enumerate(loaded.suite.claims):
        with problems.check():
            _check_claim_names(loaded, i, claim)
    problems.raise_found()


def _check_claim_names(loaded: LoadedSuite, index: int, whole: Claim) -> None:
    """The keys and arms that the parts and controls of the claim ``whole`` name."""
    suite = loaded.suite
    arms = list(suite.arms) or [SINGLE_ARM]
    for inside, claim, _ in _tested(whole):
        loc = ("claims", index) + inside
        named = [parse_metric_key(claim.metric).arm] if "/" in claim.metric else []
        for where in claim.alternatives:
            if "arm" in where:
                arm = where["arm"]
                named += [str(a) for a in arm] if isinstance(arm, list) else [str(arm)]
        if claim.compare is not None and claim.compare.arm is not None:
            named += claim.compare.arm
        for arm in named:
            if arm not in arms:
                raise loaded.fail(loc, f"claim {claim.id!r} names arm {arm!r}; "
                                       f"arms: {', '.join(arms)}")
        if claim.where == []:
            raise loaded.fail(loc + ("where",), "a list of 'where' maps needs at least one")
        for j, where in enumerate(claim.alternatives):
            at = loc + (("where", j) if isinstance(claim.where, list) else ("where",))
            if not where and isinstance(claim.where, list):
                raise loaded.fail(at, "an alternative of 'where' needs at least one key")
            if isinstance(claim.where, list) and len(arms) > 1 and named \
                    and "arm" not in where and "/" not in claim.metric \
                    and (claim.compare is None or claim.compare.arm is None):
                raise loaded.fail(at, f"claim {claim.id!r}: name the arm in every map of "
                                      f"'where' (arms: {', '.join(arms)})")
            for key in where:
                if key != "arm":
                    check_key(loaded, at + (key,), key, suite.arms, ("trial_seed",))
        if claim.compare is not None and claim.compare.key is not None:
            check_key(loaded, loc + ("compare", "key"), claim.compare.key, suite.arms)
        if len(arms) > 1 and not named:
            raise loaded.fail(loc + ("metric",), f"claim {claim.id!r}: the suite has arms "
                              f"({', '.join(arms)}); name one as '<arm>/{claim.metric}', "
                              "'where: {arm: A}' or 'compare: {arm: [A, B]}'")


def check_claim_metrics(loaded: LoadedSuite, registry: Registry, cells: list[Cell],
                         profile: str) -> None:
    """Every claim's metric is measured in the profile, with a field the metric declares
    (every claim's problem at once)."""
    specs, problems = measured(cells), Problems()
    for i, claim in enumerate(loaded.suite.claims):
        with problems.check():
            _check_metrics(loaded, registry, specs, profile, i, claim)
    problems.raise_found()


def _check_metrics(loaded: LoadedSuite, registry: Registry, specs: dict[str, str],
                   profile: str, index: int, claim: Claim) -> None:
    """The metric of every part and control of ``claim`` in a profile measuring
    ``specs``: measured, a declared field, a decidable rate, a valid test of a time."""
    for at, part, _ in _tested(claim):
        loc = ("claims", index) + at
        check_result_key(loaded, registry, loc + ("metric",), part.metric, specs,
                          f"profile {profile!r}", f"claim {claim.id!r}")
        doc = _field_doc(registry, part, specs)
        _check_rate(loaded, loc, part, doc)
        _check_censored(loaded, loc, part, doc)
        if at[:1] != ("control",):
            _check_absence(loaded, loc, claim, part, doc)


def _check_absence(loaded: LoadedSuite, loc: Loc, claim: Claim, part: Claim,
                   doc: FieldDoc | None) -> None:
    """An absence (``absence``) names a positive control, unless the claim is a sanity
    check (an identity, not a finding)."""
    what = absence(part, part.interval(doc is not None and doc.binary) == "rate")
    if what is not None and not claim.control and claim.kind != "sanity":
        raise loaded.fail(loc + ("expect",), f"claim {claim.id!r} claims an absence ({what}): "
                          "name a positive control, 'control: [{metric, expect, where}]' at "
                          "design points where the same measurement fires, or make it "
                          "'kind: sanity' if it holds by construction (docs/claims.md, "
                          "\"Controls for absences\")")


def absence(part: Claim, rate: bool) -> str | None:
    """What a part claims never happens, or None: a rate of an outcome below c, or a
    one-sample bound on every evaluation of a run — its largest value below c (``stat: max``
    with ``< c``) or its smallest above c (``stat: min`` with ``> c``)."""
    c = f"{part.threshold:g}" if part.compare is None and part.trend is None else None
    if c is None:
        return None
    if rate and not part.expects_greater:
        return f"the rate of {part.metric} below {c}"
    if part.stat == "max" and not part.expects_greater:
        return f"{part.metric} never above {c}"
    if part.stat == "min" and part.expects_greater:
        return f"{part.metric} never below {c}"
    return None


def _field_doc(registry: Registry, part: Any, specs: dict[str, str]) -> FieldDoc | None:
    parsed = parse_metric_key(part.metric)
    return None if parsed.series == TRAIN_LOSS_KEY else \
        registry.get("metrics", specs[parsed.metric]).field_doc(parsed.field)


def _check_censored(loaded: LoadedSuite, loc: Loc, part: Any, doc: FieldDoc | None) -> None:
    """A time-to-event field is read only by a Spearman trend of its last value: the one
    test here that stays valid when runs that never reached the event are censored."""
    if doc is None or not doc.censored:
        return
    trend = part.trend
    if trend is None or trend.fit != "spearman" or part.compare is not None \
            or part.stat != "last":
        raise loaded.fail(loc + ("metric",), f"claim {part.id!r} tests {part.metric}, a time "
                          "to an event (runs that never reach it are censored at their "
                          "budget): only a Spearman trend of its last value ranks them "
                          "validly; write 'trend: {key: K, fit: spearman}' (docs/claims.md, "
                          "\"Censored outcomes\")")


def _check_rate(loaded: LoadedSuite, loc: Loc, part: Any, doc: FieldDoc | None) -> None:
    """A rate is compared with c ± margin strictly between 0 and 1 (else no data decide it)."""
    if part.interval(doc is not None and doc.binary) != "rate":
        return
    edge = part.threshold + (part.margin if part.expects_greater else -part.margin)
    if not 0 < edge < 1:
        raise loaded.fail(loc + ("expect",), f"claim {part.id!r} tests a rate against "
                          f"c ± margin = {edge:g}; a rate is compared with a value strictly "
                          "between 0 and 1")




def _check_decidable(loaded: LoadedSuite, index: int, claim: Claim,
                     profiles: dict[str, list[Cell]]) -> None:
    """Some profile holds a unit of every part of ``claim`` (a profile without one lists
    the claim as not in this profile)."""
    parts = claim.parts
    testable = {name: [form_of(p).decidable(loaded.suite, p, selected_cells(p, cells))
                       for p in parts] for name, cells in profiles.items()}
    if any(all(flags) for flags in testable.values()):
        _check_controls(loaded, index, claim, profiles, testable)
        return
    for j, part in enumerate(parts):
        if any(flags[j] for flags in testable.values()):
            continue
        key, why = form_of(part).undecidable(claim.id, part)
        raise loaded.fail(("claims", index) + (("also", j - 1) if j else ()) + (key,), why)
    where = "; ".join(f"part {j + 1}: " + (", ".join(n for n, f in testable.items() if f[j]))
                      for j in range(len(parts)))
    raise loaded.fail(("claims", index), f"claim {claim.id!r}: no profile can test every part "
                                         f"({where})")


def _check_power(loaded: LoadedSuite, registry: Registry, profile: str,
                 cells: list[Cell]) -> None:
    """Every claim of ``profile``'s family can reach a p-value below Holm's strictest
    threshold with the trial seeds that decide it (``claims.power``)."""
    _refuse_undecidable(loaded, profile, profile_powers(loaded, registry, profile, cells),
                        "")


def check_paper_power(loaded: LoadedSuite, registry: Registry, profile: str,
                      cells: list[Cell], others: dict[str, int]) -> None:
    """The same over the paper's family, the one its pages tell readers to quote: the
    suite's claims not quoted per suite and ``others`` (sibling suite -> its family's size
    in ``profile``)."""
    powers = profile_powers(loaded, registry, profile, cells, sum(others.values()))
    suites = ", ".join(sorted([loaded.suite.name, *others]))
    _refuse_undecidable(loaded, profile, powers, f" over {loaded.suite.paper}'s family "
                        f"({suites})", "; or say why it is quoted per suite, 'per_suite: "
                        "<why>' (docs/claims.md, \"Families\")")


def _refuse_undecidable(loaded: LoadedSuite, profile: str, powers: dict[str, list[Power]],
                        family: str, instead: str = "") -> None:
    ids = [c.id for c in loaded.suite.claims]
    for claim_id, parts in powers.items():
        for j, power in enumerate(parts):
            if power.decidable:
                continue
            raise loaded.fail(
                ("claims", ids.index(claim_id)) + (("also", j - 1) if j else ()),
                f"claim {claim_id!r} cannot be decided in profile {profile!r}{family}: with "
                f"{power.seeds} trial seeds its smallest p-value is {power.best_p:.2g} "
                f"({power.how}), not below Holm's threshold 0.05/{power.family} = "
                f"{power.threshold:.2g}; it needs at least {power.needed} trial seeds there"
                + (instead or " (docs/claims.md, \"Decidable by design\")"))


def _check_controls(loaded: LoadedSuite, index: int, claim: Claim,
                    profiles: dict[str, list[Cell]], testable: dict[str, list[bool]]) -> None:
    """Every control can be tested in every profile that can test the claim."""
    for k, control in enumerate(claim.controls):
        for name, cells in profiles.items():
            if all(testable[name]) and not form_of(control).decidable(
                    loaded.suite, control, selected_cells(control, cells)):
                raise loaded.fail(("claims", index, "control", k, "where"),
                                  f"claim {claim.id!r}: its control selects no cell in "
                                  f"profile {name!r}, which tests the claim")
