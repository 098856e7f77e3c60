"""A paper's claims across the profiles the store holds (``scale_rows``), and each claim's
exploration verdict beside its confirmation verdict (``confirmation_rows``): the two tables
each paper doc keeps. Each suite decides on its own seeds, its profiles read as the file
declares them (``Study.stored_verdicts``)."""

from __future__ import annotations

from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict
from geobench.run.store import Store
from geobench.study import Study


def scale_rows(studies: list[Study], store: Store) -> tuple[list[str], list[list[str]]]:
    """The profiles run and one row per counted claim (``kind: claim``) tested at two or
    more of them (``insufficient`` does not count): its id and suite, its raw verdict in
    each profile (— where not run), and ``every scale`` when it holds at each scale tested
    or ``changes`` when its verdicts differ; the others are left out."""
    verdicts: dict[str, dict[tuple[str, str], str]] = {}
    for study in studies:
        for at in study.each_profile():
            for v in at.stored_verdicts(store) or []:
                if v.claim.kind == "claim" and v.verdict != NOT_IN_PROFILE:
                    verdicts.setdefault(at.profile, {})[(v.claim.id, study.name)] = v.verdict
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


def confirmation_rows(studies: list[Study], store: Store) -> list[list[str]]:
    """One row per claim of every suite and profile with stored confirmation cells, tested
    on either seed set: its id, suite and profile, its status on the confirmation seeds,
    its exploration verdicts (raw / Holm over the suite), its confirmation verdicts (raw /
    Holm over the suite / Holm over the paper), and ``changed`` where the raw verdicts of a
    claim tested on both differ."""
    rows = []
    for study in studies:
        for at in study.each_profile():
            if not at.has_confirmation:
                continue
            confirm = at.stored_verdicts(store)
            if confirm is None:
                continue
            at.paper_holm(confirm, store)
            explore = at.verdicts(store, "explore")
            for e, c in zip(explore, confirm):
                if NOT_IN_PROFILE == e.verdict == c.verdict:
                    continue
                rows.append([f"`{c.claim.id}` ({study.name} · {at.profile})", _status(c),
                             f"{e.verdict} / {e.verdict_holm or '—'}",
                             f"{c.verdict} / {c.verdict_holm or '—'} / "
                             f"{c.verdict_paper or '—'}",
                             "changed" if e.verdict != c.verdict
                             and NOT_IN_PROFILE not in (e.verdict, c.verdict) else ""])
    return rows
