"""``expect: "< c"`` / ``"> c"`` alone: ``d = value - c`` per selected cell and arm."""

from __future__ import annotations

from geobench.claims.forms.base import Form
from geobench.claims.units import Chosen, PartUnits
from geobench.suite.schema import Claim, Suite


class OneSample(Form):
    def applies(self, part: Claim) -> bool:
        return part.compare is None and part.trend is None

    def collect_units(self, part_units: PartUnits, suite: Suite, chosen: Chosen) -> None:
        threshold = (part_units.claim.threshold, "")
        for cell, arms in chosen.values():
            for arm in arms:
                part_units.add(cell.trial_seed, cell, arm, part_units.get(cell, arm), threshold)
