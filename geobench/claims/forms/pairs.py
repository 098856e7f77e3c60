"""``compare: {key, a, b}``: ``d = value(a) - value(b)`` for two cells with the same trial
seed and the same value of every other grid key (grid keys zipped with ``key``, or
containing it, go with it)."""

from __future__ import annotations

from geobench.claims.forms.base import Form
from geobench.claims.select import key_pairs, key_sides, selected_cells
from geobench.claims.units import Chosen, PartUnits
from geobench.suite.filters import Checking, check_known, listing, same, show
from geobench.suite.load import Loc
from geobench.suite.schema import Claim, Suite


class Pairs(Form):
    def applies(self, part: Claim) -> bool:
        return part.trend is None and part.compare is not None and part.compare.key is not None

    def collect_units(self, part_units: PartUnits, suite: Suite, chosen: Chosen) -> None:
        compare = part_units.claim.compare
        for a, b in key_pairs(suite, [c for c, _ in chosen.values()], compare.key, compare.a,
                              compare.b):
            sides = [chosen[c.id][1] for c in (a, b) if c is not None]
            for arm in [x for x in sides[0] if all(x in side for side in sides)]:
                part_units.add((a or b).trial_seed, a, arm, part_units.get(a, arm),
                               part_units.get(b, arm), cell_b=b)

    def decidable(self, suite: Suite, part: Claim, chosen: Chosen) -> bool:
        """A selected pair with an arm both sides were selected with."""
        compare = part.compare
        for a, b in key_pairs(suite, [c for c, _ in chosen.values()], compare.key, compare.a,
                              compare.b):
            if a is not None and b is not None \
                    and any(arm in chosen[b.id][1] for arm in chosen[a.id][1]):
                return True
        return False

    def undecidable(self, claim_id: str, part: Claim) -> tuple[str, str]:
        compare = part.compare
        return "compare", (f"claim {claim_id!r}: no profile has a pair of cells its 'where' "
                           f"selects with {compare.key} = {show(compare.a)} and "
                           f"{show(compare.b)}, alike in every other grid key")

    def check(self, checking: Checking, loc: Loc, what: str, part: Claim) -> None:
        """``key`` is a key some cell has, ``a`` and ``b`` are values it takes, and
        a side holds one cell: the ``where`` may not select two cells of one side that differ
        only in keys zipped with ``key``."""
        loaded, compare = checking.loaded, part.compare
        check_known(loaded, loc + ("compare", "key"), compare.key, checking.known, what)
        for side in ("a", "b"):
            value = getattr(compare, side)
            if not any(same(value, v) for v in checking.values(compare.key)):
                raise loaded.fail(loc + ("compare", side), f"{what}: {side} = {show(value)} "
                                  f"is not a value of {compare.key!r} in any cell; it takes: "
                                  f"{listing(checking.values(compare.key))}")
        for profile, cells in checking.profiles.items():
            chosen = [c for c, _ in selected_cells(part, cells).values()]
            for sides in key_sides(loaded.suite, chosen, compare.key, compare.a, compare.b):
                for side, group in sides.items():
                    if len(group) < 2:
                        continue
                    differ = sorted({k for c in group for k, v in c.varied.items()
                                     if v != group[0].varied.get(k)})
                    raise loaded.fail(loc + ("where",), f"{what}: {compare.key} = "
                                      f"{show(getattr(compare, side))} selects {len(group)} "
                                      f"cells of one trial seed in profile {profile!r}, "
                                      f"differing in {', '.join(differ)}; narrow its 'where' "
                                      "to the one to compare")
