"""Holm's correction over a paper's family: every counted claim of the paper's suites that
the store holds cells of in one profile, corrected together (docs/claims.md, "Families")."""

from __future__ import annotations

from dataclasses import dataclass, field

from geobench.claims.claims_table import counts_text
from geobench.claims.verdicts import Verdict, holm_verdicts


@dataclass
class PaperFamily:
    """Holm's family over a paper's suites in one profile: the paper, the suites whose
    claims entered it (stored cells in the profile), those of the paper without any, and
    how many claims it tests."""

    paper: str
    suites: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    size: int = 0

    def note(self, verdicts: list[Verdict]) -> str:
        """The line under the table: the family, this suite's counts in it and its claims
        quoted per suite, with why."""
        mine = [v.verdict_paper for v in verdicts if v.counted and not v.claim.per_suite]
        apart = [f"`{v.claim.id}` ({v.claim.per_suite})" for v in verdicts
                 if v.counted and v.claim.per_suite]
        missing = f"; not run in this profile: {', '.join(self.not_run)}" if self.not_run \
            else ""
        return (f"**Holm over {self.paper}** (family-wise α = 0.05 over the {self.size} "
                f"pre-registered claims tested in this profile by "
                f"{', '.join(self.suites)}{missing}): this suite's "
                f"{counts_text([v or '' for v in mine])}. Quote this column for the paper "
                "(docs/claims.md, \"Families\")." + (
                    f" Quoted per suite, outside the family: {'; '.join(apart)}."
                    if apart else ""))


Sibling = tuple[str, list[Verdict] | None, bool]
"""Another suite of the paper: its name, its verdicts in the profile (None: no stored
cell there), and whether it declares the profile at all."""


def paper_holm(paper: str, suite: str, verdicts: list[Verdict],
               siblings: list[Sibling]) -> PaperFamily:
    """Set ``verdict_paper`` of ``verdicts`` (suite ``suite``'s): Holm's over them and the
    counted claims of every sibling with stored cells, less the claims quoted per suite
    (their ``verdict_paper`` None); return the family."""
    family = PaperFamily(paper, [suite])
    everyone = [v for v in verdicts if v.claim.per_suite is None]
    for name, theirs, declared in siblings:
        if theirs is None:
            if declared:
                family.not_run.append(name)
            continue
        family.suites.append(name)
        everyone += [v for v in theirs if v.claim.per_suite is None]
    for v, h in zip(everyone, holm_verdicts(everyone)):
        v.verdict_paper = h
    family.size = sum(v.counted and v.p_value is not None for v in everyone)
    return family
