"""``compare: {arm: [a, b]}``: ``d = value(arm a) - value(arm b)`` within each selected
cell."""

from __future__ import annotations

from geobench.claims.forms.base import Form
from geobench.claims.units import Chosen, PartUnits
from geobench.suite.schema import Claim, Suite


class Arms(Form):
    def applies(self, part: Claim) -> bool:
        return part.trend is None and part.compare is not None and part.compare.arm is not None

    def collect_units(self, part_units: PartUnits, suite: Suite, chosen: Chosen) -> None:
        a, b = part_units.claim.compare.arm
        for cell, _ in chosen.values():
            part_units.add(cell.trial_seed, cell, f"{a}-{b}", part_units.get(cell, a),
                           part_units.get(cell, b))
