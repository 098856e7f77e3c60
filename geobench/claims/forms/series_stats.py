"""``compare: {stat: [a, b]}``: ``d = stat a - stat b`` of the same series (``[last,
first]``: its change over the run), per selected cell and arm."""

from __future__ import annotations

from geobench.claims.forms.base import Form
from geobench.claims.units import Chosen, Tally
from geobench.suite.schema import Claim, Suite


class SeriesStats(Form):
    def applies(self, part: Claim) -> bool:
        return part.trend is None and part.compare is not None \
            and part.compare.stat is not None

    def tally(self, tally: Tally, suite: Suite, chosen: Chosen) -> None:
        for cell, arms in chosen.values():
            for arm in arms:
                tally.add(cell.trial_seed, cell, arm,
                          *(tally.get(cell, arm, s) for s in tally.claim.compare.stat))
