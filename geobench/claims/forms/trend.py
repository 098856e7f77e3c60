"""``trend: {key, x, fit}`` with ``"> c"`` / ``"< c"``: ``d = fit - c``, the least-squares
slope of the values (their log under ``scale: log``) against x = each cell's ``key`` (its
log with ``x: log``), or Spearman's ρ, over the cells of one trial seed that share every
other grid key (keys zipped with ``key`` go with it); with ``compare: {arm: [a, b]}`` the
values are ``value(arm a) - value(arm b)``. Cells without a usable value are left out of
the fit (named in the unit); a fit needs ``MIN_TREND_POINTS`` distinct x values.  On a
time-to-event field a run that never reached the event is censored (y = inf) and Spearman's
ρ ranks it above every observed time, valid when no run's budget lies below an observed
time of its group (else the unit is left out); validation allows no other test there."""

from __future__ import annotations

import math

from geobench.claims.forms.base import Form
from geobench.claims.select import MIN_TREND_POINTS, distinct_values, key_groups, selected_cells
from geobench.claims.stats import trend_fit
from geobench.claims.units import Chosen, PartUnits, Unit
from geobench.records import Cell
from geobench.suite.filters import Checking, check_known
from geobench.suite.load import Loc
from geobench.suite.schema import Claim, Suite
from geobench.suite.where import config_value


class Trend(Form):
    def applies(self, part: Claim) -> bool:
        return part.trend is not None

    def collect_units(self, part_units: PartUnits, suite: Suite, chosen: Chosen) -> None:
        """One unit per group of cells alike in every grid key but the trend's (and the
        trial seed's), per arm they were all selected with (one for an arm difference)."""
        for group in key_groups(suite, [c for c, _ in chosen.values()], part_units.claim.trend.key):
            arms = [x for x in chosen[group[0].id][1]
                    if all(x in chosen[c.id][1] for c in group)]
            for arm in arms[:1] if part_units.claim.compare is not None else arms:
                _add_fit(part_units, group, arm)

    def decidable(self, suite: Suite, part: Claim, chosen: Chosen) -> bool:
        """A group of selected cells with ``MIN_TREND_POINTS`` values of the key."""
        key = part.trend.key
        return any(distinct_values(group, key) >= MIN_TREND_POINTS
                   for group in key_groups(suite, [c for c, _ in chosen.values()], key))

    def undecidable(self, claim_id: str, part: Claim) -> tuple[str, str]:
        return "trend", (f"claim {claim_id!r}: no profile has {MIN_TREND_POINTS} values of "
                         f"{part.trend.key} among the cells its 'where' selects, alike in "
                         "every other grid key")

    def check(self, checking: Checking, loc: Loc, what: str, part: Claim) -> None:
        """The key is one some cell has, and in every cell the part selects it holds a
        number (positive for ``x: log``)."""
        trend, at = part.trend, loc + ("trend", "key")
        check_known(checking.loaded, at, trend.key, checking.known, what)
        for cell, _ in selected_cells(part, checking.every).values():
            value = config_value(cell, trend.key)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or (trend.x == "log" and value <= 0):
                need = "a positive number (x: log)" if trend.x == "log" else "a number"
                raise checking.loaded.fail(at, f"{what}: the trend's x, {trend.key!r}, is "
                                           f"{value!r} in a {cell.profile!r} cell its 'where' "
                                           f"selects; it must be {need} in every selected "
                                           "cell")

    def describe(self, part: Claim) -> str:
        return super().describe(part) + f" ({trend_text(part)})"


def trend_text(part: Claim) -> str:
    """A trend part's fit, e.g. ``slope of log y on log data.classes`` (empty for other
    forms): its units' ``a`` is the fitted slope or ρ and ``d`` = a − c, never logged."""
    trend = part.trend
    if trend is None:
        return ""
    y = "log y" if part.scale == "log" else "y"
    return f"{trend.fit} of {y} on {'log ' if trend.x == 'log' else ''}{trend.key}"


def _point(part_units: PartUnits, cell: Cell, arms: list[str | None]) -> tuple[float | None, str]:
    """y of a trend at ``cell``: the arm's value, or the difference of two arms' (both
    logged under ``scale: log``), or None and why not."""
    tx = math.log if part_units.claim.scale == "log" else float
    sides = [part_units.get(cell, arm) for arm in arms]
    why = next((w for _, w in sides if w), "")
    if why:
        return None, why
    ys = [tx(v) for v, _ in sides]
    return (ys[0] - ys[1] if len(ys) == 2 else ys[0]), ""


def _unranked(part_units: PartUnits, cells: list[Cell], points: list[tuple[float, float]]) -> str:
    """Why censored runs (y = inf) cannot rank above every observed time of the group: a
    run's budget (``train.steps``, logged under ``scale: log``) below an observed time;
    empty when they can, or when nothing is censored."""
    if not any(math.isinf(y) for _, y in points):
        return ""
    tx = math.log if part_units.claim.scale == "log" else float
    budget = min(tx(float(config_value(c, "train.steps"))) for c in cells)
    observed = max((y for _, y in points if math.isfinite(y)), default=-math.inf)
    return "" if observed <= budget else \
        "censored at a budget below an observed time: the ranks are unknown"


def _add_fit(part_units: PartUnits, cells: list[Cell], arm: str | None) -> None:
    """A trend unit: the fit over ``cells`` (one trial seed, one group) minus c."""
    trend, compare = part_units.claim.trend, part_units.claim.compare
    arms = list(compare.arm) if compare is not None else [arm]
    points, dropped = [], []
    for cell in cells:
        y, why = _point(part_units, cell, arms)
        x = float(config_value(cell, trend.key))
        if y is None:
            dropped.append(f"{trend.key}={x:g}: {why}")
        else:
            points.append((math.log(x) if trend.x == "log" else x, y))
    why = next((d for d in dropped if "missing:" in d), "") or _unranked(part_units, cells, points)
    fit = math.nan
    if distinct_values(cells, trend.key) < MIN_TREND_POINTS:
        why = f"absent: fewer than {MIN_TREND_POINTS} values of {trend.key} in this profile"
    elif not why and len({x for x, _ in points}) < MIN_TREND_POINTS:
        why = f"fewer than {MIN_TREND_POINTS} values of {trend.key} with a value"
    elif not why:
        fit = trend_fit([x for x, _ in points], [y for _, y in points], trend.fit)
        why = "" if math.isfinite(fit) else f"{trend.fit} undefined (constant values)"
    c = part_units.claim.threshold
    config = f"{trend.fit} over {trend.key} = " + ", ".join(
        f"{config_value(cell, trend.key)}" for cell in cells)
    if dropped and not why:
        config += "; left out: " + "; ".join(dropped)
    part_units.units.append(Unit(cells[0].trial_seed, cells[0].id, config,
                                 "-".join(a or "" for a in arms), None if why else fit, c,
                                 None if why else fit - c, cells[-1].id, "", why))
