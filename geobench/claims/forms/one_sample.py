"""``expect: "< c"`` / ``"> c"`` alone: ``d = value - c`` per selected cell and arm."""

from __future__ import annotations

from geobench.claims.forms.base import Form
from geobench.claims.units import Chosen, Tally
from geobench.suite.schema import Claim, Suite


class OneSample(Form):
    def applies(self, part: Claim) -> bool:
        return part.compare is None and part.trend is None

    def tally(self, tally: Tally, suite: Suite, chosen: Chosen) -> None:
        threshold = (tally.claim.threshold, "")
        for cell, arms in chosen.values():
            for arm in arms:
                tally.add(cell.trial_seed, cell, arm, tally.get(cell, arm), threshold)
