"""What a claim form is: which parts it reads, how it turns their selected cells into units,
when a profile can decide it, what it checks of a suite, and how the claims table names it.
A form overrides ``applies`` and ``collect_units``; the rest has defaults for forms that read
one cell at a time."""

from __future__ import annotations

import abc
from typing import Any

from geobench.claims.units import Chosen, PartUnits
from geobench.suite.filters import Checking
from geobench.suite.load import Loc
from geobench.suite.schema import Claim, Suite


class Form(abc.ABC):
    """One way a claim part turns stored values into units (``forms.FORMS`` lists them)."""

    @abc.abstractmethod
    def applies(self, part: Claim) -> bool:
        """This form reads ``part``."""

    @abc.abstractmethod
    def collect_units(self, part_units: PartUnits, suite: Suite, chosen: Chosen) -> None:
        """Add a unit to ``part_units`` for every cell (or pair, group) ``chosen`` holds."""

    def decidable(self, suite: Suite, part: Claim, chosen: Chosen) -> bool:
        """One profile's ``chosen`` cells hold a unit of ``part``: here, any cell."""
        return bool(chosen)

    def undecidable(self, claim_id: str, part: Claim) -> tuple[str, str]:
        """The key to point at, and the line to say, when no profile holds a unit."""
        return "where", f"claim {claim_id!r} selects no cell in any profile"

    def check(self, checking: Checking, loc: Loc, what: str, part: Claim) -> None:
        """Validation of the form's own keys against every profile's cells (none here)."""
        return None

    def describe(self, part: Claim) -> str:
        """What the claims table adds after the metric and expectation: the compared
        values, if any."""
        return compared(part.compare) if part.compare is not None else ""


def compared(compare: Any) -> str:
    """`` (a=…, b=…)``, or `` (key: a=…, b=…)`` for a ``compare: {key}``."""
    a, b = (compare.a, compare.b) if compare.key else compare.arm or compare.stat
    return f" (a={a}, b={b})" if compare.key is None else f" ({compare.key}: a={a}, b={b})"
