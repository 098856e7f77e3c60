"""One pipeline from a suite file to its verdicts.

``Study.open(path, profile, ...)`` reads the suite file once, validates every profile and
checks its claims once, and holds the cells of one profile under the command line's
``--set`` and ``--only``. Every command asks it the same questions: the cells (of either
trial-seed set), the verdicts on the seeds that decide them (raw and with Holm's correction
over the suite), and the verdicts a page publishes (Holm over the paper's family, the raw
verdicts at the suite's other profiles). Words: docs/architecture.md, "Glossary".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geobench.claims.family import PaperFamily, paper_holm
from geobench.claims.power import profile_family
from geobench.claims.validate import check_claim_metrics, check_paper_power, checked_profiles
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import Verdict, apply_holm, evaluate, mark_revised
from geobench.contract.manager import registry as loaded_registry
from geobench.contract.registry import Registry
from geobench.records import Cell
from geobench.study.registered import Registration, read_registration
from geobench.suite import CELL_LIMIT, LoadedSuite, load_suite
from geobench.suite.expand import check_profile, profile_cells
from geobench.suite.seeds import (
    SeedSet,
    deciding_set,
    has_confirmation,
    has_replication,
    seed_cells,
    seed_plan,
)

if TYPE_CHECKING:
    from geobench.run.store import Store

Revised = tuple[set[str], dict[str, str]] | None
"""Confirmation cells whose values changed since a page published them, and the verdicts
that page published (claim id -> verdict); None: no earlier page to compare."""


class Study:
    """A suite validated once (every profile, claims included) and seen through
    ``profile`` under ``overrides`` (``--set``) and ``only`` (``--only``): ``cells`` are
    that profile's cells, ``profiles`` every profile's cells as the file declares them."""

    def __init__(self, loaded: LoadedSuite, registry: Registry, profile: str = "smoke",
                 overrides: dict[str, Any] | None = None,
                 only: dict[str, list[Any]] | None = None, cell_limit: int = CELL_LIMIT,
                 profiles: dict[str, list[Cell]] | None = None) -> None:
        check_profile(loaded, profile)
        self.loaded, self.registry, self.profile = loaded, registry, profile
        self.overrides, self.only, self.cell_limit = overrides or {}, only or {}, cell_limit
        self.profiles = checked_profiles(loaded, registry, cell_limit) if profiles is None \
            else profiles
        self.cells = profile_cells(loaded, registry, self.profiles, profile, self.overrides,
                                   cell_limit, self.only)
        if self.overrides or self.only:
            check_claim_metrics(loaded, registry, self.cells, profile)
        self._read: dict[str, list[Study]] = {}  # the sibling suites, shared by every view
        self._registrations: dict[str, Registration | None] = {}  # profile's, shared too

    @classmethod
    def open(cls, path: str | Path, profile: str = "smoke",
             overrides: dict[str, Any] | None = None, only: dict[str, list[Any]] | None = None,
             cell_limit: int = CELL_LIMIT, registry: Registry | None = None) -> Study:
        """The suite file at ``path`` read once and validated through ``registry`` (the
        loaded plugins' by default), seen through ``profile``."""
        return cls(load_suite(path), registry or loaded_registry(), profile, overrides, only,
                   cell_limit)

    def at(self, profile: str) -> Study:
        """The same study seen through ``profile`` (the same ``--set`` and ``--only``); the
        suite is not validated again as a whole."""
        return self if profile == self.profile else \
            self._view(profile, self.overrides, self.only)

    def each_profile(self) -> Iterator[Study]:
        """The suite seen through each profile as the file declares it (smoke first; no
        ``--set`` or ``--only``); the suite is not validated again."""
        return (self._view(profile, None, None) for profile in self.profiles)

    def _view(self, profile: str, overrides: dict[str, Any] | None,
              only: dict[str, list[Any]] | None) -> Study:
        view = Study(self.loaded, self.registry, profile, overrides, only, self.cell_limit,
                     self.profiles)
        view._read, view._registrations = self._read, self._registrations
        return view

    @property
    def name(self) -> str:
        return self.loaded.suite.name

    @property
    def path(self) -> str:
        return self.loaded.path

    def seed_cells(self, seeds: SeedSet) -> list[Cell]:
        """The cells of the exploration (``explore``), confirmation (``confirm``) or
        ``all`` trial seeds."""
        return seed_cells(self.loaded, self.profile, self.cells, seeds)

    def deciding_seeds(self, seeds: SeedSet | None = None) -> SeedSet:
        """``seeds``, by default the set that decides the verdicts: the confirmation seeds
        where the profile declares them, else the exploration seeds."""
        return deciding_set(self.loaded, self.profile, seeds)

    def decided_cells(self, seeds: SeedSet | None = None) -> list[Cell]:
        """The cells of ``seeds``, by default of the set that decides the verdicts."""
        return self.seed_cells(self.deciding_seeds(seeds))

    @property
    def has_confirmation(self) -> bool:
        """Whether the profile declares confirmation seeds."""
        return has_confirmation(self.loaded, self.profile)

    @property
    def has_replication(self) -> bool:
        """Whether the profile declares replication seeds."""
        return has_replication(self.loaded, self.profile)

    def verdicts(self, store: Store, seeds: SeedSet | None = None,
                 values: StoredValues | None = None, revised: Revised = None
                 ) -> list[Verdict]:
        """Every claim's verdict on ``seeds`` (by default the deciding set), raw and with
        Holm's correction over the suite; ``values`` of the study's cells when already
        read. On the confirmation (or replication) seeds of a profile with a registration of
        them, a claim that is not decided under it is post hoc (``Registration.reason``); with
        ``revised`` (the cells changed since a page published them, and the verdicts it
        published), the claims that read one are marked revised
        (``claims.verdicts.mark_revised``)."""
        which = self.deciding_seeds(seeds)
        cells = self.seed_cells(which)
        values = StoredValues(store, cells) if values is None else values
        blind = which in ("confirm", "replicate")
        verdicts = evaluate(self.loaded, cells, values, self.registry, blind)
        registration = self.registered(which) if blind else None
        if registration is not None:
            chosen = seed_plan(self.loaded, self.profile).seeds(which)
            for v in verdicts:
                v.seen = v.seen or registration.reason(v.claim, cells, values, chosen)
        if which == "confirm" and revised is not None:
            mark_revised(verdicts, *revised)
        apply_holm(verdicts)
        return verdicts

    @property
    def registration(self) -> Registration | None:
        """The profile's registration of its confirmation seeds (``study.registered``), None
        when it has none."""
        return self.registered("confirm")

    def registered(self, which: SeedSet) -> Registration | None:
        """The profile's registration of its ``which`` seeds (``confirm`` or ``replicate``),
        None when it has none; read once for every view of the study."""
        key = f"{self.profile}:{which}"
        if key not in self._registrations:
            self._registrations[key] = read_registration(self.loaded, self.profile, which)
        return self._registrations[key]

    def published_verdicts(self, store: Store, values: StoredValues | None = None,
                           revised: Revised = None
                           ) -> tuple[list[Verdict], PaperFamily | None]:
        """The verdicts a page publishes: on the deciding seeds (the claims reading a cell
        ``revised`` since the page's earlier write marked so), with Holm over the suite
        and over the paper's family (None: the suite names no paper), and each claim's raw
        verdict at the suite's other profiles that the store holds cells of."""
        verdicts = self.verdicts(store, values=values, revised=revised)
        family = self.paper_holm(verdicts, store)
        for other in self.each_profile():
            if other.profile != self.profile:
                for v, w in zip(verdicts, other.stored_verdicts(store) or []):
                    v.scales[other.profile] = w.verdict
        return verdicts, family

    def stored_verdicts(self, store: Store) -> list[Verdict] | None:
        """``verdicts`` on the deciding seeds, None when the store holds none of those cells:
        what a page reads of the suite's other profiles and of the paper's other suites,
        each seen as its file declares it (``each_profile``, ``siblings``)."""
        values = StoredValues(store, self.decided_cells())
        return self.verdicts(store, values=values) if values.rows else None

    def siblings(self) -> list[Study]:
        """The other suites of the study's paper in its folder (by name), each read once."""
        paper = self.loaded.suite.paper
        if "siblings" not in self._read:
            here = Path(self.path)
            found = [] if paper is None else [load_suite(p) for p in sorted(
                here.parent.glob("*.yaml")) if p.resolve() != here.resolve()]
            self._read["siblings"] = [Study(s, self.registry) for s in sorted(
                found, key=lambda s: s.suite.name) if s.suite.paper == paper]
        return self._read["siblings"]

    def check_paper_power(self) -> None:
        """Every claim of every profile can be decided over its paper's family there (the
        family its pages tell readers to quote: ``validate.check_paper_power``), unless it
        is quoted per suite."""
        if self.loaded.suite.paper is None:
            return
        for profile, cells in self.profiles.items():
            others = {s.name: sum(c.per_suite is None for c in
                                  profile_family(s.loaded, profile, s.profiles[profile]))
                      for s in self.siblings() if profile in s.profiles}
            check_paper_power(self.loaded, self.registry, profile, cells, others)

    def paper_holm(self, verdicts: list[Verdict], store: Store) -> PaperFamily | None:
        """Set ``verdict_paper`` of ``verdicts`` (the study's, in its profile): Holm's over
        them and the counted claims of every sibling suite with stored cells in the
        profile; the family, or None where the suite names no paper."""
        paper = self.loaded.suite.paper
        if paper is None:
            return None
        siblings = []
        for sibling in self.siblings():
            declared = self.profile in sibling.profiles
            theirs = sibling.at(self.profile).stored_verdicts(store) if declared else None
            siblings.append((sibling.name, theirs, declared))
        return paper_holm(paper, self.name, verdicts, siblings)
