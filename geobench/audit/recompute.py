"""Recompute every claim's effect, 95% interval and p-value from a leaderboard's
``<suite>_claims.csv`` alone, with numpy and scipy: this file imports nothing of geobench
(copy it anywhere to run it), and shares no code with the one that computed the page; with
``--values``, first check each unit's a and b against the stored values published beside it
(``<suite>_values.csv.gz``).

    python -m geobench.audit.recompute leaderboards/collapse_claims.csv \
        [--values leaderboards/collapse_values.csv.gz]

prints one line per claim part (claim, part, interval, n, effect, interval, p-value,
verdict), then one per claim (p-value, raw and Holm verdicts).  The rules, from
docs/claims.md: the rows with an empty ``excluded`` enter; ``d`` is ``a − b`` (``log a −
log b`` under ``scale: log``, but never for a ``trend`` part, whose ``a`` is the fitted slope
or rho; ``b`` is the threshold c of a one-sample part); the trial
seed is the unit of replication (mean d per seed); ``ci`` says the interval: Student-t,
percentile bootstrap (10,000 resamples by numpy's PCG64 seeded 0; the bounds are the lower
and higher order statistics at 2.5% and 97.5%), or Clopper–Pearson on k = the sum of
per-seed rates of ``a`` out of n seeds (reported as the rate minus c).  The p-value is
two-sided, twice the smaller one-sided p.  A claim of several parts has p_holds = the
largest part's and p_fails = k times the smallest (at most 1); Holm–Bonferroni at 0.05 runs
over the claims with ``posthoc`` 0, ``kind`` claim, a test and a p-value.  A part whose every
row is ``absent:`` (the profile lacks its cells) is ``not in this profile``, and so is its
claim unless another part ``fails`` (a failing part is never hidden).  A claim other than a
sanity check with a part (3 trial seeds or more, ``ci`` not ``rate``) whose per-seed mean d
have a standard deviation of at most 1e-12 is ``degenerate``: no test, outside the family.
These are verdict rules 2 (``--rules``); under rules 1, ``not in this profile`` outranked
``fails`` and nothing was degenerate.
Rows whose part is ``c1``, ``c2``, ... are the claim's positive controls, recomputed alike: a
claim that holds reads ``inconclusive`` unless every control holds too.

A unit's a and b are read from the values file by cell id, arm, metric and stat: the value
of the series ``<metric id>.<field>`` of that cell and arm (``main`` in a run of one arm;
a cross-arm series ``<reference>~<arm>`` where the arm has none of its own), reduced by the
stat: ``last`` is the value at the last step as stored, ``first``, ``min``, ``max`` and
``mean`` leave NaN values out.  The arm form's ``arm`` column names two arms ``a-b`` of one
cell; the paired form's b is read from ``cell_b``; a stat ``a-b`` (``last-first``) reduces
one series two ways; a one-sample part's b is its threshold, and a trend part's a is a fit
over several cells: neither is a stored value, so neither is checked.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

LEVEL = 0.95
NOT_IN_PROFILE = "not in this profile"
RULES = 2
ZERO_SPREAD = 1e-12


def _seed_means(rows: list[dict], key: str) -> list[float]:
    seeds: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        seeds[int(r["trial_seed"])].append(float(r[key]))
    return [float(np.mean(seeds[s])) for s in sorted(seeds)]


def _d(row: dict) -> float:
    a, b = float(row["a"]), float(row["b"])
    if row.get("trend"):  # a is the fitted slope or rho, b the threshold: never logged
        return a - b
    return math.log(a) - math.log(b) if row["scale"] == "log" else a - b


def recompute(rows: list[dict]) -> dict:
    """Effect, interval, one-sided p-values and verdict of one part from its unit rows."""
    first = rows[0]
    used = [dict(r, d=_d(r)) for r in rows if not r["excluded"]]
    greater = ">" in first["expect"]
    sign, margin = (1.0 if greater else -1.0), float(first["margin"])
    edge = sign * margin
    out = {"method": first["ci"], "n": len({r["trial_seed"] for r in used})}
    if all("absent:" in r["excluded"] for r in rows):
        return {**out, "verdict": NOT_IN_PROFILE}
    if out["n"] < 3:
        return {**out, "verdict": "insufficient"}
    n = out["n"]
    if first["ci"] == "rate":
        c = float(first["expect"].strip()[1:])
        k = sum(_seed_means(used, "a"))
        low = 0.0 if k <= 0 else stats.beta.ppf(0.025, k, n - k + 1)
        high = 1.0 if k >= n else stats.beta.ppf(0.975, k + 1, n - k)
        q = min(max(c + edge, 0.0), 1.0)  # geobench refuses c ± margin outside (0, 1)
        above = 1.0 if k <= 0 else stats.beta.cdf(q, k, n - k + 1)
        below = 1.0 if k >= n else stats.beta.sf(q, k + 1, n - k)
        effect, low, high = k / n - c, low - c, high - c
    else:
        d = np.array(_seed_means(used, "d"))
        out["zero_spread"] = bool(d.std(ddof=1) <= ZERO_SPREAD)
        effect = float(d.mean())
        if first["ci"] == "bootstrap":
            rng = np.random.Generator(np.random.PCG64(0))
            means = d[rng.integers(0, n, size=(10_000, n))].mean(axis=1)
            low = np.quantile(means, 0.025, method="lower")
            high = np.quantile(means, 0.975, method="higher")
            above, below = np.mean(means <= edge), np.mean(means >= edge)
        else:
            se = d.std(ddof=1) / math.sqrt(n)
            half = stats.t.ppf(0.975, n - 1) * se
            low, high = effect - half, effect + half
            if se > 0:
                t = (effect - edge) / se
                above, below = stats.t.sf(t, n - 1), stats.t.cdf(t, n - 1)
            else:
                above, below = float(effect <= edge), float(effect >= edge)
    lo, hi = sorted((sign * low, sign * high))
    verdict = "holds" if lo > margin else "fails" if hi < margin else "inconclusive"
    p_holds, p_fails = (above, below) if greater else (below, above)
    return {**out, "effect": effect, "ci_low": float(low), "ci_high": float(high),
            "p_holds": float(p_holds), "p_fails": float(p_fails),
            "p_value": min(1.0, 2 * min(p_holds, p_fails)), "verdict": verdict}


def recompute_file(path: str) -> dict[tuple[str, int], dict]:
    """Every part of every claim in the CSV, by (claim, part)."""
    return {key: r for key, r in _recompute_rows(path).items() if isinstance(key[1], int)}


def recompute_controls(path: str) -> dict[tuple[str, str], dict]:
    """Every positive control of every claim in the CSV, by (claim, ``c1``, ...)."""
    return {key: r for key, r in _recompute_rows(path).items() if isinstance(key[1], str)}


def _recompute_rows(path: str) -> dict[tuple[str, int | str], dict]:
    rows: dict[tuple[str, int | str], list[dict]] = defaultdict(list)
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            part = row["part"]
            rows[(row["claim"], part if part.startswith("c") else int(part))].append(row)
    return {key: recompute(group) for key, group in rows.items()}


def recompute_claims(path: str, rules: int = RULES) -> dict[str, dict]:
    """Every claim's p-values, raw verdict and Holm verdict (None outside the family)."""
    return recompute_all(path, rules)[2]


def recompute_all(path: str, rules: int = RULES) -> tuple[dict, dict, dict]:
    """Every part (``recompute_file``), control (``recompute_controls``) and claim
    (``recompute_claims``) of the CSV, each unit read once, under verdict ``rules``."""
    rows = _recompute_rows(path)
    parts = {key: r for key, r in rows.items() if isinstance(key[1], int)}
    controls = {key: r for key, r in rows.items() if isinstance(key[1], str)}
    unfired = {c for (c, _), r in controls.items() if r["verdict"] != "holds"}
    with open(path, newline="") as fh:
        # outside the family: post hoc, or a sanity check, contrast or corollary (kind not claim)
        kinds = {row["claim"]: (row["posthoc"] == "1", row.get("kind", "claim"))
                 for row in csv.DictReader(fh)}
    order = ("fails", NOT_IN_PROFILE, "insufficient") if rules >= 2 else (
        NOT_IN_PROFILE, "fails", "insufficient")
    claims = {}
    for claim in dict.fromkeys(c for c, _ in parts):
        mine = [r for (c, _), r in sorted(parts.items()) if c == claim]
        verdicts = [r["verdict"] for r in mine]
        verdict = next((w for w in order if w in verdicts),
                       "holds" if set(verdicts) == {"holds"} else "inconclusive")
        if verdict == "holds" and claim in unfired:  # the absence's control did not fire
            verdict = "inconclusive"
        posthoc, kind = kinds[claim]
        degenerate = (rules >= 2 and kind != "sanity" and verdict != NOT_IN_PROFILE
                      and any(r.get("zero_spread") for r in mine))
        out = {"verdict": "degenerate" if degenerate else verdict, "degenerate": degenerate,
               "posthoc": posthoc or kind != "claim" or degenerate, "p_value": None}
        if verdict not in ("insufficient", NOT_IN_PROFILE):
            p_holds = max(r.get("p_holds", 1.0) for r in mine)
            tested = [r["p_fails"] for r in mine if "p_fails" in r]
            p_fails = min(1.0, len(mine) * min(tested)) if tested else 1.0
            out["p_value"] = min(1.0, 2 * min(p_holds, p_fails))
        claims[claim] = out
    family = sorted((c for c, r in claims.items() if not r["posthoc"] and r["p_value"] is not None),
                    key=lambda c: claims[c]["p_value"])
    rejected = set()
    for rank, claim in enumerate(family):
        if not claims[claim]["p_value"] < 0.05 / (len(family) - rank):
            break
        rejected.add(claim)
    for claim, r in claims.items():
        decided = claim in rejected and r["verdict"] in ("holds", "fails")
        untested = NOT_IN_PROFILE if r["verdict"] == NOT_IN_PROFILE else "insufficient"
        r["verdict_holm"] = (None if r["posthoc"] else untested if r["p_value"] is None
                             else r["verdict"] if decided else "inconclusive")
    return parts, controls, claims


Series = dict[tuple[str, str, str], list[tuple[int, float]]]


def read_values(path: str, metrics: set[str] | None = None) -> Series:
    """The values file's series: (cell, arm, ``<metric>.<field>``) -> [(step, value)] in
    step order; with ``metrics``, only the series of those ``<metric>.<field>``."""
    series: Series = defaultdict(list)
    with gzip.open(path, "rt", newline="") as fh:
        rows = csv.reader(fh)
        column = {name: i for i, name in enumerate(next(rows))}
        cell, arm, metric, field, step, value = (column[k] for k in (
            "cell", "arm", "metric", "field", "step", "value"))
        for row in rows:
            if row[step]:
                name = f"{row[metric]}.{row[field]}"
                if metrics is None or name in metrics:
                    series[(row[cell], row[arm], name)].append((int(row[step]),
                                                                float(row[value])))
    for points in series.values():
        points.sort(key=lambda point: point[0])
    return series


def stored(series: Series, cell: str, arm: str, metric: str, stat: str) -> float | None:
    """``stat`` of the series of ``metric`` for ``arm`` of ``cell`` (None: not stored)."""
    labels = [arm] if arm else ["main"]
    labels += sorted(a for c, a, m in series if c == cell and m == metric
                     and arm and a.endswith(f"~{arm}"))
    points = next((series[(cell, a, metric)] for a in labels if (cell, a, metric) in series),
                  None)
    if points is None:
        return None
    if stat == "last":
        return points[-1][1]
    values = [v for _, v in points if not math.isnan(v)]
    if not values:
        return math.nan
    return {"first": values[0], "min": min(values), "max": max(values),
            "mean": sum(values) / len(values)}[stat]


def _arms(series: Series, cell: str) -> set[str]:
    return {a for c, a, _ in series if c == cell}


def unit_sides(row: dict, series: Series) -> list[tuple[str, float | None]]:
    """The sides of a unit that are stored values, each as (a or b, value read)."""
    cell, arm, metric, stat = row["cell"], row["arm"], row["metric"], row["stat"]
    if row["trend"] or not cell:
        return []
    if "-" in stat:  # two reductions of one series
        first, second = stat.split("-")
        return [("a", stored(series, cell, arm, metric, first)),
                ("b", stored(series, cell, arm, metric, second))]
    if row["cell_b"]:  # paired cells
        return [("a", stored(series, cell, arm, metric, stat)),
                ("b", stored(series, row["cell_b"], arm, metric, stat))]
    known = _arms(series, cell)
    if arm and arm not in known:  # the arm form: a-b, both arms of this cell
        for i in (i for i, ch in enumerate(arm) if ch == "-"):
            a, b = arm[:i], arm[i + 1:]
            if {a, b} <= {x.rpartition("~")[2] for x in known}:
                return [("a", stored(series, cell, a, metric, stat)),
                        ("b", stored(series, cell, b, metric, stat))]
    return [("a", stored(series, cell, arm, metric, stat))]


def _same(published: str, read: float | None) -> bool:
    if read is None:
        return False
    value = float(published)
    return value == read or (math.isnan(value) and math.isnan(read))


def unit_metrics(path: str) -> set[str]:
    """The ``<metric>.<field>`` of every unit of the CSV whose a or b is a stored value."""
    with open(path, newline="") as fh:
        return {row["metric"] for row in csv.DictReader(fh) if row["cell"] and not row["trend"]}


def check_units(path: str, values: str | Series) -> tuple[int, int, list[str]]:
    """Each unit side with a published value against the values file (or its series, read
    already): (sides checked, units left out as trend fits, one line per side that differs,
    from its line in the units CSV)."""
    if isinstance(values, str):
        wanted = unit_metrics(path)
        values = read_values(values, wanted) if wanted else {}
    with open(path, newline="") as fh:
        units = list(csv.DictReader(fh))
    series, checked, trends, differ = values, 0, 0, []
    for line, row in enumerate(units, start=2):
        trends += bool(row["trend"] and row["cell"])
        for side, read in unit_sides(row, series):
            if not row[side]:
                continue
            checked += 1
            if not _same(row[side], read):
                differ.append(f"line {line}, claim {row['claim']} part {row['part']} "
                              f"seed {row['trial_seed']} cell {row['cell']}: {side} = "
                              f"{row[side]}, stored {read!r}")
    return checked, trends, differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("claims_csv", help="a leaderboard's <suite>_claims.csv")
    ap.add_argument("--values", metavar="FILE", help="its <suite>_values.csv.gz: check each "
                                                     "unit's a and b against it first")
    ap.add_argument("--rules", type=int, choices=(1, 2), default=RULES,
                    help="the verdict rules the page was decided under (its record's "
                         "\"rules\"; 1 where it has none)")
    args = ap.parse_args(argv)
    for path in (args.claims_csv, args.values):
        if path is not None and not Path(path).is_file():
            ap.error(f"{path}: no such file")
    if args.values:
        checked, trends, differ = check_units(args.claims_csv, args.values)
        print(f"units: {checked} values of a and b checked against {args.values}: "
              f"{checked - len(differ)} equal, {len(differ)} differ; {trends} trend units "
              "left out (a is a fit over several cells)")
        for line in differ:
            print(f"  differs: {line}")
    path = args.claims_csv
    for (claim, part), r in recompute_file(path).items():
        numbers = "" if r["verdict"] in ("insufficient", NOT_IN_PROFILE) else (
            f"effect {r['effect']:+.4g} [{r['ci_low']:+.4g}, {r['ci_high']:+.4g}] "
            f"p {r['p_value']:.3g} ")
        print(f"{claim} part {part}: {r['method']} n={r['n']} {numbers}{r['verdict']}")
    for claim, r in recompute_claims(path, args.rules).items():
        p = "—" if r["p_value"] is None else f"{r['p_value']:.3g}"
        print(f"{claim}: p {p} {r['verdict']}, Holm {r['verdict_holm'] or '— (outside)'}")
    return 1 if args.values and differ else 0


if __name__ == "__main__":
    sys.exit(main())
