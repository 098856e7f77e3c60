"""The units of a claim part: a cell and arm, or a pair of cells, with the values that
entered its ``d`` or the reason it was left out (``PartUnits`` collects them as a form reads
the store). Units, parts and forms: docs/architecture.md, "Glossary"."""

from __future__ import annotations

import math
from dataclasses import dataclass

from geobench.claims.values import StoredValues
from geobench.records import Cell, Status
from geobench.suite.schema import Claim

NO_PARTNER = "absent: no partner cell selected in this profile"
REASONS = {Status.DIVERGED: "diverged", Status.FAILED: "failed"}

Chosen = dict[str, tuple[Cell, list[str | None]]]
"""The cells a part's ``where`` selects, by cell id, each with the arms it names (None: the
metric's own arm); ``select.selected_cells`` builds it."""


@dataclass
class Unit:
    """One unit of a claim part: a cell and arm (one-sample, arm and stat forms) or a pair of
    cells (``cell`` the a side, ``cell_b`` the b side), with the values that entered ``d``
    (``b`` is the threshold c of a one-sample part), or why it was left out."""

    trial_seed: int
    cell: str
    config: str  # the cell's grid values other than the trial seed, "key=value; ..."
    arm: str
    a: float | None
    b: float | None
    d: float | None
    cell_b: str = ""
    config_b: str = ""
    excluded: str = ""

    @property
    def missing(self) -> bool:
        """A side of the unit is not in the store yet (and neither is absent)."""
        return "missing:" in self.excluded and not self.absent

    @property
    def absent(self) -> bool:
        """The unit's partner cell (or, for a trend, enough of its points) is not in the
        profile."""
        return "absent:" in self.excluded


class PartUnits:
    """The units of one claim part."""

    def __init__(self, claim: Claim, values: StoredValues, rate: bool,
                 censored: bool = False) -> None:
        self.claim, self.values, self.rate, self.censored = claim, values, rate, censored
        self.units: list[Unit] = []

    def get(self, cell: Cell | None, arm: str | None, stat: str | None = None
            ) -> tuple[float | None, str]:
        """The raw value (``stat``, default the claim's) for ``arm`` of ``cell``, or None and
        why it is unusable; on a time-to-event field (``censored``) a complete run that never
        reached the event gives ``inf``: censored at its budget."""
        if cell is None:
            return None, NO_PARTNER
        status = self.values.status(cell, arm, self.claim.metric)
        if status == Status.MISSING:
            return None, "missing: not in the store"
        if status in REASONS:
            return None, REASONS[status]
        value = self.values.value(cell, arm, self.claim.metric, stat or self.claim.stat)
        failure = self.values.failure(cell, arm, self.claim.metric) if value is None else None
        if failure is not None:
            return None, f"metric failed at step {failure.step}"
        if value is None:
            return None, "no value"
        if math.isnan(value) and self.censored and status == Status.COMPLETE:
            return math.inf, ""  # the event did not happen within the run: censored
        if math.isnan(value):
            return None, "NaN"
        if self.claim.scale == "log" and value <= 0:
            return None, "non-positive under scale: log"
        if self.rate and value not in (0.0, 1.0):
            return None, "not 0 or 1 (ci: rate)"
        return value, ""

    def add(self, seed: int, cell: Cell | None, arm: str | None, a: tuple[float | None, str],
            b: tuple[float | None, str], cell_b: Cell | None = None) -> None:
        """A unit from its two sides (value, reason); the first reason excludes it."""
        why = a[1] or b[1]
        if a[1] and b[1] and a[1] != b[1]:
            why = f"a: {a[1]}; b: {b[1]}"
        d = None
        if not why:
            tx = math.log if self.claim.scale == "log" else float
            d = tx(a[0]) - tx(b[0])
        self.units.append(Unit(seed, cell.id if cell else "", config_text(cell), arm or "",
                               a[0], b[0], d, cell_b.id if cell_b else "", config_text(cell_b),
                               why))

    def per_seed(self) -> dict[int, list[Unit]]:
        """The units that entered, by trial seed, in seed order."""
        seeds: dict[int, list[Unit]] = {}
        for u in sorted((u for u in self.units if u.d is not None), key=lambda u: u.trial_seed):
            seeds.setdefault(u.trial_seed, []).append(u)
        return seeds


def config_text(cell: Cell | None) -> str:
    """A cell's grid values other than the trial seed, ``key=value; ...``."""
    if cell is None:
        return ""
    return "; ".join(f"{k}={v}" for k, v in cell.varied.items() if k != "trial_seed")
