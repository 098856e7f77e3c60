"""A profile's trial seeds in two disjoint sets: exploration seeds (``seeds:``), on which a
suite's claims may be shaped, and confirmation seeds (``confirm:``), which decide the
published verdicts (docs/claims.md, "Confirmation seeds"; the deciding seeds:
docs/architecture.md, "Glossary")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from geobench.records import Cell
from geobench.suite.load import LoadedSuite, Loc
from geobench.suite.schema import SeedRange

SeedSet = Literal["all", "explore", "confirm"]
SEED_SETS: tuple[str, ...] = ("all", "explore", "confirm")


@dataclass(frozen=True)
class SeedPlan:
    """A profile's seeds as written: ``explore`` (a count N or a list) and ``confirm``
    (a list, a range or None), with where each is written."""

    explore: int | list[int]
    confirm: list[int] | SeedRange | None
    explore_loc: Loc
    confirm_loc: Loc

    @property
    def count(self) -> int:
        """How many trial seeds the profile has, counted without listing them."""
        explore = self.explore if isinstance(self.explore, int) else len(self.explore)
        confirm = self.confirm.count if isinstance(self.confirm, SeedRange) \
            else len(self.confirm or [])
        return explore + confirm

    def seeds(self, which: SeedSet = "all") -> list[int]:
        """The trial seeds of ``which`` set, exploration first."""
        explore = list(range(self.explore)) if isinstance(self.explore, int) \
            else list(self.explore)
        confirm = self.confirm.seeds if isinstance(self.confirm, SeedRange) \
            else list(self.confirm or [])
        return {"all": explore + confirm, "explore": explore, "confirm": confirm}[which]


def seed_plan(loaded: LoadedSuite, profile: str) -> SeedPlan:
    """``profile``'s seeds: its own ``seeds`` and ``confirm``, else the suite's."""
    suite, prof = loaded.suite, loaded.suite.profiles.get(profile)
    at = ("profiles", profile)
    own_seeds = prof is not None and prof.seeds is not None
    own_confirm = prof is not None and prof.confirm is not None
    return SeedPlan(prof.seeds if own_seeds else suite.seeds,
                    prof.confirm if own_confirm else suite.confirm,
                    at + ("seeds",) if own_seeds else ("seeds",),
                    at + ("confirm",) if own_confirm else ("confirm",))


def check_disjoint(loaded: LoadedSuite, profile: str, plan: SeedPlan) -> None:
    """No trial seed is both an exploration and a confirmation seed of ``profile``."""
    both = sorted(set(plan.seeds("explore")) & set(plan.seeds("confirm")))
    if both:
        raise loaded.fail(plan.confirm_loc, f"profile {profile!r}: trial seed {both[0]} is "
                          "both an exploration seed ('seeds') and a confirmation seed "
                          "('confirm'); the two sets are disjoint")


def has_confirmation(loaded: LoadedSuite, profile: str) -> bool:
    """Whether ``profile`` declares confirmation seeds."""
    return seed_plan(loaded, profile).confirm is not None


def seed_cells(loaded: LoadedSuite, profile: str, cells: list[Cell],
               which: SeedSet) -> list[Cell]:
    """The cells of ``cells`` whose trial seed is in ``profile``'s ``which`` set; asking for
    the confirmation seeds of a profile that declares none is an error."""
    if which == "all":
        return cells
    plan = seed_plan(loaded, profile)
    if which == "confirm" and plan.confirm is None:
        raise loaded.fail(plan.confirm_loc, f"profile {profile!r} declares no confirmation "
                          "seeds: add 'confirm: [...]' or '{first: F, count: N}' (disjoint "
                          "from 'seeds'), or choose the exploration seeds")
    chosen = set(plan.seeds(which))
    return [c for c in cells if c.trial_seed in chosen]


def deciding_set(loaded: LoadedSuite, profile: str, which: SeedSet | None = None) -> SeedSet:
    """``which`` set, by default the one that decides ``profile``'s verdicts: its
    confirmation seeds where it declares them, else its exploration seeds."""
    if which is None:
        return "confirm" if has_confirmation(loaded, profile) else "explore"
    return which


def confirming(loaded: LoadedSuite, profile: str, which: SeedSet | None = None) -> bool:
    """Whether ``which`` set (by default the deciding one) is ``profile``'s confirmation
    seeds: seeds that did not shape its claims."""
    return deciding_set(loaded, profile, which) == "confirm"


def decided_cells(loaded: LoadedSuite, profile: str, cells: list[Cell],
                  which: SeedSet | None = None) -> list[Cell]:
    """The cells of ``which`` set, by default those whose verdicts a reader gets
    (``deciding_set``)."""
    return seed_cells(loaded, profile, cells, deciding_set(loaded, profile, which))
