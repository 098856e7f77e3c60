"""``compare: {stat: [a, b]}``: ``d = stat a - stat b`` of the same series (``[last,
first]``: its change over the run), per selected cell and arm."""

from __future__ import annotations

from geobench.claims.forms.base import Form
from geobench.claims.units import Chosen, PartUnits
from geobench.suite.schema import Claim, Suite


class SeriesStats(Form):
    def applies(self, part: Claim) -> bool:
        return part.trend is None and part.compare is not None \
            and part.compare.stat is not None

    def collect_units(self, part_units: PartUnits, suite: Suite, chosen: Chosen) -> None:
        for cell, arms in chosen.values():
            for arm in arms:
                stats = part_units.claim.compare.stat
                part_units.add(cell.trial_seed, cell, arm,
                               *(part_units.get(cell, arm, s) for s in stats))
