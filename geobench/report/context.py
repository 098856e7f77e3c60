"""A suite's verdicts beside what the same store says elsewhere: Holm's correction over the
paper's family (every counted claim of the suites of the same ``paper:`` in the suite's
folder, in the same profile), each claim's raw verdict in the suite's other profiles that
have been run, and a paper's claims across its scales (``scale_rows``).  Each suite decides
on its own seeds (``suite.seeds.decided_cells``)."""

from __future__ import annotations

from pathlib import Path

from geobench.claims.checks import checked_profiles
from geobench.claims.table import PaperFamily
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict, evaluate, holm_verdicts
from geobench.contract.registry import Registry
from geobench.records import Cell
from geobench.run.store import Store
from geobench.suite import LoadedSuite, load_suite
from geobench.suite.seeds import decided_cells, has_confirmation, seed_cells


def stored_verdicts(loaded: LoadedSuite, profile: str, profiles: dict[str, list[Cell]],
                    store: Store, registry: Registry) -> list[Verdict] | None:
    """The suite's verdicts in ``profile`` (its cells among ``profiles``, as
    ``checked_profiles`` gives them) on its deciding seeds; None when the suite has no such
    profile or the store holds none of its cells there."""
    if profile not in profiles:
        return None
    cells = decided_cells(loaded, profile, profiles[profile])
    values = StoredValues(store, cells)
    return evaluate(loaded, cells, values, registry, has_confirmation(loaded, profile)) \
        if values.rows else None


def paper_siblings(loaded: LoadedSuite) -> list[LoadedSuite]:
    """The other suites of ``loaded``'s paper in its folder, by name."""
    if loaded.suite.paper is None:
        return []
    found = [load_suite(p) for p in sorted(Path(loaded.path).parent.glob("*.yaml"))
             if p.resolve() != Path(loaded.path).resolve()]
    return sorted((s for s in found if s.suite.paper == loaded.suite.paper),
                  key=lambda s: s.suite.name)


def apply_paper_holm(loaded: LoadedSuite, profile: str, verdicts: list[Verdict],
                     store: Store, registry: Registry) -> PaperFamily | None:
    """Set ``verdict_paper`` of ``verdicts`` (the suite's, in ``profile``): Holm's over them
    and the counted claims of every sibling suite with stored cells in the profile."""
    if loaded.suite.paper is None:
        return None
    family = PaperFamily(loaded.suite.paper, [loaded.suite.name])
    everyone = list(verdicts)
    for sibling in paper_siblings(loaded):
        profiles = checked_profiles(sibling, registry)
        theirs = stored_verdicts(sibling, profile, profiles, store, registry)
        if theirs is None:
            if profile in profiles:
                family.not_run.append(sibling.suite.name)
            continue
        family.suites.append(sibling.suite.name)
        everyone += theirs
    for v, h in zip(everyone, holm_verdicts(everyone)):
        v.verdict_paper = h
    family.size = sum(v.counted and v.p_value is not None for v in everyone)
    return family


def apply_scales(loaded: LoadedSuite, profile: str, verdicts: list[Verdict], store: Store,
                 registry: Registry) -> None:
    """Set ``scales`` of ``verdicts``: each claim's raw verdict in every other profile of
    the suite that the store holds cells of."""
    profiles = checked_profiles(loaded, registry)
    for other in profiles:
        if other == profile:
            continue
        theirs = stored_verdicts(loaded, other, profiles, store, registry)
        for v, w in zip(verdicts, theirs or []):
            v.scales[other] = w.verdict


def scale_rows(suites: list[LoadedSuite], store: Store, registry: Registry
               ) -> tuple[list[str], list[list[str]]]:
    """The profiles run and one row per counted claim (``kind: claim``) tested at two or
    more of them (``insufficient`` does not count): its id and suite, its raw verdict in
    each profile (— where not run), and ``every scale`` when it holds at each scale tested
    or ``changes`` when its verdicts differ; the others are left out."""
    verdicts: dict[str, dict[tuple[str, str], str]] = {}
    for loaded in suites:
        profiles = checked_profiles(loaded, registry)
        for profile in profiles:
            for v in stored_verdicts(loaded, profile, profiles, store, registry) or []:
                if v.claim.kind == "claim" and v.verdict != NOT_IN_PROFILE:
                    verdicts.setdefault(profile, {})[(v.claim.id, loaded.suite.name)] = \
                        v.verdict
    profiles = list(verdicts)
    rows = []
    for key in dict.fromkeys(k for found in verdicts.values() for k in found):
        seen = [verdicts[p].get(key) for p in profiles]
        run = [w for w in seen if w not in (None, "insufficient")]
        if len(run) < 2:
            continue
        status = "every scale" if set(run) == {"holds"} else \
            "changes" if len(set(run)) > 1 else ""
        if status:
            rows.append([f"`{key[0]}` ({key[1]})", *(w or "—" for w in seen), status])
    return profiles, sorted(rows, key=lambda r: (r[-1] != "every scale", r[0]))


def _status(v: Verdict) -> str:
    """What a verdict is evidence of: its kind, else pre-registered or post hoc (why)."""
    if v.claim.kind != "claim":
        return v.claim.kind
    return "pre-registered" if v.posthoc is None else f"post hoc: {v.posthoc}"


def confirmation_rows(suites: list[LoadedSuite], store: Store, registry: Registry
                      ) -> list[list[str]]:
    """One row per claim of every suite and profile with stored confirmation cells, tested
    on either seed set: its id, suite and profile, its status on the confirmation seeds,
    its exploration verdicts (raw / Holm over the suite), its confirmation verdicts (raw /
    Holm over the suite / Holm over the paper), and ``changed`` where the raw verdicts of a
    claim tested on both differ."""
    rows = []
    for loaded in suites:
        profiles = checked_profiles(loaded, registry)
        for profile, cells in profiles.items():
            if not has_confirmation(loaded, profile):
                continue
            confirm = stored_verdicts(loaded, profile, profiles, store, registry)
            if confirm is None:
                continue
            apply_paper_holm(loaded, profile, confirm, store, registry)
            explored = seed_cells(loaded, profile, cells, "explore")
            explore = evaluate(loaded, explored, StoredValues(store, explored), registry)
            for e, c in zip(explore, confirm):
                if NOT_IN_PROFILE == e.verdict == c.verdict:
                    continue
                rows.append([f"`{c.claim.id}` ({loaded.suite.name} · {profile})", _status(c),
                             f"{e.verdict} / {e.verdict_holm or '—'}",
                             f"{c.verdict} / {c.verdict_holm or '—'} / "
                             f"{c.verdict_paper or '—'}",
                             "changed" if e.verdict != c.verdict
                             and NOT_IN_PROFILE not in (e.verdict, c.verdict) else ""])
    return rows
