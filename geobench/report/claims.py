"""Claims of a suite tested on its stored cells: effect, 95% interval, n and a verdict.

For each claim the tested quantity ``d`` is, per pair of cells (paired form) or per cell
(one-sample form):

- ``compare: {key, a, b}``: ``value(a) - value(b)`` for two cells with the same trial seed and
  the same value of every other grid key (grid keys zipped with ``key``, or containing it, go
  with it);
- ``compare: {arm: [a, b]}``: ``value(arm a) - value(arm b)`` within each cell;
- ``compare: {stat: [a, b]}``: ``stat a - stat b`` of the same series (``[last, first]``:
  its change over the run), per selected cell and arm;
- one-sample ``expect: "< c"`` / ``"> c"``: ``value - c``.

With ``scale: log`` differences become log ratios (``log a - log b``, ``log value - log c``);
pairs with a non-positive value are excluded.  The unit of replication is the trial seed:
the ``d`` of one trial seed (several when other grid keys vary) are averaged, since cells of
one trial seed share data, views and initial weights.  The effect is the mean over trial
seeds; its 95% interval is Student-t (``ci: t``, the default) or a percentile bootstrap
(``ci: bootstrap``), over trial seeds.
The claim is ``d > margin`` (``>`` forms) or ``d < -margin`` (``<`` forms):

- ``holds``: the whole interval lies on the claimed side of the margin;
- ``fails``: the whole interval lies on the other side;
- ``inconclusive``: the interval contains the margin;
- ``insufficient``: fewer than 3 trial seeds with a value.

Diverged and failed cells, and values that are missing or NaN, are excluded and counted.
A claim with ``also`` conditions is tested part by part (each part on the claim's cells or
its own ``where``); it ``fails`` if a part fails, else is ``insufficient`` if a part is, else
``holds`` if every part holds, else ``inconclusive``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from tabulate import tabulate

from geobench.records import Cell, Status
from geobench.report.stats import interval
from geobench.report.values import StoredValues, config_value
from geobench.suite import LoadedSuite
from geobench.suite.schema import Claim

MIN_PAIRS = 3
BAD = (Status.DIVERGED, Status.FAILED)
PART_KEYS = ("effect", "ci_low", "ci_high", "n", "pairs", "excluded", "missing", "verdict")


@dataclass
class Verdict:
    """A claim's effect, interval and counts; with ``also``, those of its main part, the
    combined verdict and every part's own verdict in ``parts`` (the main part first)."""

    claim: Claim
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    pairs: int
    excluded: int
    missing: int
    verdict: str
    parts: list[Verdict] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        c = self.claim
        out = {"id": c.id, "source": c.source, "statement": c.statement, "metric": c.metric,
               "expect": c.expect, "scale": c.scale, "margin": c.margin, "ci": c.ci,
               "effect": self.effect, "ci_low": self.ci_low, "ci_high": self.ci_high,
               "n": self.n, "pairs": self.pairs, "excluded": self.excluded,
               "missing": self.missing, "verdict": self.verdict}
        if self.parts:
            keys = ("metric", "stat", "expect", "scale", "margin", "where")
            out["parts"] = [{**{k: getattr(p.claim, k) for k in keys},
                             **{k: getattr(p, k) for k in PART_KEYS}} for p in self.parts]
        return out


class _Tally:
    """The d values of one claim by trial seed, with the excluded and missing counts."""

    def __init__(self, claim: Claim, values: StoredValues) -> None:
        self.claim, self.values = claim, values
        self.d: dict[int, list[float]] = {}
        self.excluded = self.missing = 0

    def get(self, cell: Cell, arm: str | None, stat: str | None = None) -> float | None:
        """The claim's value (``stat``, default the claim's) for ``arm`` of ``cell``; None
        (counted) when unusable."""
        status = self.values.status(cell)
        if status == Status.MISSING:
            self.missing += 1
            return None
        value = None if status in BAD else self.values.value(cell, arm, self.claim.metric,
                                                              stat or self.claim.stat)
        if value is None or math.isnan(value) or (self.claim.scale == "log" and value <= 0):
            self.excluded += 1
            return None
        return math.log(value) if self.claim.scale == "log" else value

    def add(self, trial_seed: int, a: float | None, b: float | None) -> None:
        if a is not None and b is not None:
            self.d.setdefault(trial_seed, []).append(a - b)

    def per_seed(self) -> list[float]:
        """The mean d of each trial seed, in seed order."""
        return [sum(v) / len(v) for _, v in sorted(self.d.items())]


def evaluate(loaded: LoadedSuite, cells: list[Cell], values: StoredValues) -> list[Verdict]:
    """The verdict of every claim of the suite on ``cells``."""
    return [evaluate_claim(c, loaded, cells, values) for c in loaded.suite.claims]


def _matches(value: Any, wanted: Any) -> bool:
    """A config value matches a ``where`` value, or one of a list of them."""
    return value == wanted or (isinstance(wanted, list) and value in wanted)


def _chosen(claim: Claim, cells: list[Cell]) -> dict[str, tuple[Cell, list[str | None]]]:
    """The cells some alternative of ``where`` selects, each with the arms it names (None:
    the metric's own arm), by cell id, in cell order; a unit selected twice counts once.
    A pair of the ``compare: {key}`` form reads the arms both of its cells were selected
    with."""
    chosen: dict[str, tuple[Cell, list[str | None]]] = {}
    for cell in cells:
        for where in claim.alternatives:
            if not all(_matches(config_value(cell, k), v) for k, v in where.items()
                       if k != "arm"):
                continue
            arm = where.get("arm")
            arms = chosen.setdefault(cell.id, (cell, []))[1]
            for name in arm if isinstance(arm, list) else [arm]:
                if name not in arms:
                    arms.append(name)
    return chosen


def evaluate_claim(claim: Claim, loaded: LoadedSuite, cells: list[Cell],
                   values: StoredValues) -> Verdict:
    """The verdict of ``claim``; with ``also``, every part's and the combined one."""
    if not claim.also:
        return _evaluate_part(claim, loaded, cells, values)
    parts = [_evaluate_part(p, loaded, cells, values) for p in claim.parts]
    return replace(parts[0], claim=claim, verdict=combined([p.verdict for p in parts]),
                   parts=parts)


def combined(verdicts: list[str]) -> str:
    """``fails`` if any part fails (one refuted part refutes the conjunction), else
    ``insufficient`` if any part is, else ``holds`` if every part holds, else
    ``inconclusive``."""
    for worst in ("fails", "insufficient"):
        if worst in verdicts:
            return worst
    return "holds" if all(v == "holds" for v in verdicts) else "inconclusive"


def _evaluate_part(claim: Claim, loaded: LoadedSuite, cells: list[Cell],
                   values: StoredValues) -> Verdict:
    chosen = _chosen(claim, cells)
    tally = _Tally(claim, values)
    compare = claim.compare
    if compare is None:
        threshold = math.log(claim.threshold) if claim.scale == "log" else claim.threshold
        for cell, arms in chosen.values():
            for arm in arms:
                tally.add(cell.trial_seed, tally.get(cell, arm), threshold)
    elif compare.arm is not None:
        for cell, _ in chosen.values():
            tally.add(cell.trial_seed, tally.get(cell, compare.arm[0]),
                      tally.get(cell, compare.arm[1]))
    elif compare.stat is not None:
        for cell, arms in chosen.values():
            for arm in arms:
                tally.add(cell.trial_seed, *(tally.get(cell, arm, s) for s in compare.stat))
    else:
        pairs = _pairs(loaded, [c for c, _ in chosen.values()], compare.key, compare.a,
                       compare.b)
        for a, b in pairs:
            sides = [chosen[c.id][1] for c in (a, b) if c is not None]
            for arm in [x for x in sides[0] if all(x in side for side in sides)]:
                va = tally.get(a, arm) if a is not None else _absent(tally)
                vb = tally.get(b, arm) if b is not None else _absent(tally)
                tally.add((a or b).trial_seed, va, vb)
    return _verdict(claim, tally)


def _absent(tally: _Tally) -> None:
    tally.missing += 1
    return None


def _pairs(loaded: LoadedSuite, cells: list[Cell], key: str, a: Any, b: Any
           ) -> list[tuple[Cell | None, Cell | None]]:
    """Cells with ``key == a`` matched to cells with ``key == b`` of the same trial seed and
    the same values of every grid key that does not go with ``key``."""
    drop = _going_with(loaded, cells[0].profile if cells else "smoke", key)
    sides: dict[Any, dict[Any, Cell]] = {}
    for cell in cells:
        value = config_value(cell, key)
        side = "a" if value == a else "b" if value == b else None
        if side is None:
            continue
        ident = repr(sorted((k, repr(v)) for k, v in cell.varied.items()
                            if k not in drop and not _related(k, key)))
        sides.setdefault(ident, {})[side] = cell
    return [(pair.get("a"), pair.get("b")) for pair in sides.values()]


def _related(grid_key: str, key: str) -> bool:
    return grid_key == key or key.startswith(grid_key + ".") or grid_key.startswith(key + ".")


def _going_with(loaded: LoadedSuite, profile: str, key: str) -> set[str]:
    """Grid keys zipped together with ``key`` (they change with it)."""
    prof = loaded.suite.profiles.get(profile)
    zips = prof.zip if prof is not None and prof.zip is not None else loaded.suite.zip
    return {k for group in zips if any(_related(g, key) for g in group) for k in group}


def _verdict(claim: Claim, tally: _Tally) -> Verdict:
    d = tally.per_seed()
    n, pairs = len(d), sum(len(v) for v in tally.d.values())
    if n == 0:
        return Verdict(claim, None, None, None, 0, 0, tally.excluded, tally.missing,
                       "insufficient")
    effect, low, high = interval(d, claim.ci)
    clean = [None if math.isnan(x) else x for x in (low, high)]
    if n < MIN_PAIRS or clean[0] is None:
        verdict = "insufficient"
    else:
        sign = 1.0 if claim.expects_greater else -1.0
        lo, hi = sorted((sign * low, sign * high))
        verdict = ("holds" if lo > claim.margin else "fails" if hi < claim.margin
                   else "inconclusive")
    return Verdict(claim, effect, clean[0], clean[1], n, pairs, tally.excluded, tally.missing,
                   verdict)


def format_effect(v: Verdict) -> str:
    """``effect [low, high]``; a log-scale effect as a ratio ``×r [×lo, ×hi]``."""
    if v.effect is None:
        return "—"
    log = v.claim.scale == "log"

    def fmt(x: float | None) -> str:
        if x is None:
            return "—"
        return f"×{math.exp(x):.3g}" if log else f"{x:+.3g}"

    return f"{fmt(v.effect)} [{fmt(v.ci_low)}, {fmt(v.ci_high)}]"


def claims_table(verdicts: list[Verdict]) -> str:
    """The markdown (github) table of verdicts: id, source, statement, effect, n, verdict."""
    rows = []
    for v in verdicts:
        n = str(v.n) + (f" ({v.pairs} pairs)" if v.pairs != v.n else "") \
            + (f" ({v.excluded} excluded)" if v.excluded else "") \
            + (f" ({v.missing} missing)" if v.missing else "")
        parts = v.parts or [v]
        rows.append([f"`{v.claim.id}`", v.claim.source, v.claim.statement,
                     " and ".join(f"`{p.claim.metric}` {p.claim.expect}"
                                  + _own_cells(p.claim, v.claim) for p in parts),
                     "; ".join(format_effect(p) for p in parts), n, f"**{v.verdict}**"])
    headers = ["claim", "source", "statement", "tested", "effect [95% CI]", "n (trial seeds)",
               "verdict"]
    return markdown_table(rows, headers)


def _own_cells(part: Claim, claim: Claim) -> str:
    """`` at k=v, ...`` for a part that tests other cells than its claim's, else ''."""
    if part.where == claim.where:
        return ""
    alternatives = [", ".join(f"{k}={v}" for k, v in w.items()) for w in part.alternatives]
    return " at " + " or ".join(alternatives)


def md_cell(text: str) -> str:
    """``text`` safe inside a markdown table cell: a '|' would end the cell."""
    return text.replace("|", "\\|")


def markdown_table(rows: list[list[str]], headers: list[str]) -> str:
    """A github markdown table of ``rows`` with every cell and header escaped."""
    return tabulate([[md_cell(c) for c in row] for row in rows],
                    headers=[md_cell(h) for h in headers], tablefmt="github") + "\n"
