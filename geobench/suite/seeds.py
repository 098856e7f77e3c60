"""A profile's trial seeds in disjoint sets: exploration seeds (``seeds:``), on which a
suite's claims may be shaped, confirmation seeds (``confirm:``), which decide the published
verdicts (docs/claims.md, "Confirmation seeds"; the deciding seeds: docs/architecture.md,
"Glossary"), and replication seeds (``replicate:``), on which each verdict is decided again
(docs/claims.md, "Replication")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from geobench.records import Cell
from geobench.suite.load import LoadedSuite, Loc
from geobench.suite.schema import SeedRange

SeedSet = Literal["all", "explore", "confirm", "replicate"]
SEED_SETS: tuple[str, ...] = ("all", "explore", "confirm", "replicate")
KEYS = {"explore": "seeds", "confirm": "confirm", "replicate": "replicate"}  # in the file
NAMES = {"explore": "exploration", "confirm": "confirmation", "replicate": "replication"}


@dataclass(frozen=True)
class SeedPlan:
    """A profile's seeds as written: ``explore`` (a count N or a list), ``confirm`` and
    ``replicate`` (each a list, a range or None), with where each is written."""

    explore: int | list[int]
    confirm: list[int] | SeedRange | None
    explore_loc: Loc
    confirm_loc: Loc
    replicate: list[int] | SeedRange | None = None
    replicate_loc: Loc = ("replicate",)

    @property
    def count(self) -> int:
        """How many trial seeds the profile has, counted without listing them."""
        explore = self.explore if isinstance(self.explore, int) else len(self.explore)
        return explore + sum(s.count if isinstance(s, SeedRange) else len(s or [])
                             for s in (self.confirm, self.replicate))

    def seeds(self, which: SeedSet = "all") -> list[int]:
        """The trial seeds of ``which`` set; ``all``: the exploration then the confirmation
        seeds (a run's default: the replication seeds run when asked for)."""
        explore = list(range(self.explore)) if isinstance(self.explore, int) \
            else list(self.explore)
        sets = {"explore": explore, "confirm": _listed(self.confirm),
                "replicate": _listed(self.replicate)}
        return sets["explore"] + sets["confirm"] if which == "all" else sets[which]

    def declared(self) -> list[int]:
        """Every trial seed the profile declares, the replication seeds last: its cells'."""
        return self.seeds("all") + self.seeds("replicate")

    def loc(self, which: SeedSet) -> Loc:
        """Where ``which`` set is written (or would be)."""
        return {"explore": self.explore_loc, "confirm": self.confirm_loc,
                "replicate": self.replicate_loc}.get(which, self.explore_loc)

    def declares(self, which: SeedSet) -> bool:
        """Whether the profile declares ``which`` set (the exploration seeds always)."""
        return {"confirm": self.confirm, "replicate": self.replicate}.get(which, 0) is not None


def _listed(seeds: list[int] | SeedRange | None) -> list[int]:
    return seeds.seeds if isinstance(seeds, SeedRange) else list(seeds or [])


def seed_plan(loaded: LoadedSuite, profile: str) -> SeedPlan:
    """``profile``'s seeds: its own ``seeds``, ``confirm`` and ``replicate``, each else the
    suite's."""
    suite, prof = loaded.suite, loaded.suite.profiles.get(profile)
    at = ("profiles", profile)

    def own(key: str) -> bool:
        return prof is not None and getattr(prof, key) is not None

    def pick(key: str) -> Any:
        return getattr(prof if own(key) else suite, key)

    def where(key: str) -> Loc:
        return at + (key,) if own(key) else (key,)

    return SeedPlan(pick("seeds"), pick("confirm"), where("seeds"), where("confirm"),
                    pick("replicate"), where("replicate"))


def check_disjoint(loaded: LoadedSuite, profile: str, plan: SeedPlan) -> None:
    """No trial seed is in two of ``profile``'s sets (exploration, confirmation,
    replication)."""
    if plan.replicate is not None and plan.confirm is None:
        raise loaded.fail(plan.replicate_loc, f"profile {profile!r} declares replication "
                          "seeds ('replicate') but no confirmation seeds ('confirm'): a "
                          "replication repeats the confirmation")
    for one, other in (("explore", "confirm"), ("explore", "replicate"),
                       ("confirm", "replicate")):
        both = sorted(set(plan.seeds(one)) & set(plan.seeds(other)))  # type: ignore[arg-type]
        if both:
            raise loaded.fail(plan.loc(other), f"profile {profile!r}: trial seed {both[0]} "
                              f"is in both '{KEYS[one]}' and '{KEYS[other]}'; the sets of "
                              "trial seeds are disjoint")


def has_confirmation(loaded: LoadedSuite, profile: str) -> bool:
    """Whether ``profile`` declares confirmation seeds."""
    return seed_plan(loaded, profile).confirm is not None


def has_replication(loaded: LoadedSuite, profile: str) -> bool:
    """Whether ``profile`` declares replication seeds."""
    return seed_plan(loaded, profile).replicate is not None


def seed_cells(loaded: LoadedSuite, profile: str, cells: list[Cell],
               which: SeedSet) -> list[Cell]:
    """The cells of ``cells`` whose trial seed is in ``profile``'s ``which`` set; asking for
    the confirmation or replication seeds of a profile that declares none is an error."""
    plan = seed_plan(loaded, profile)
    if which == "all" and plan.replicate is None:
        return cells
    if not plan.declares(which):
        raise loaded.fail(plan.loc(which), f"profile {profile!r} declares no {NAMES[which]} "
                          f"seeds: add '{KEYS[which]}: [...]' or '{{first: F, count: N}}' "
                          "(disjoint from the other sets), or choose the exploration seeds")
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
