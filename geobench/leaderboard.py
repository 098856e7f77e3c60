"""Aggregate a suite's stored cells over seeds into a markdown table (tabulate) and plots."""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tabulate import tabulate

from geobench.config import LeaderboardMetric, PlotSpec
from geobench.store import Store
from geobench.suite import SINGLE_ARM, Cell, LoadedSuite, get_dotted

MISSING = "—"


def _row_keys(loaded: LoadedSuite, cells: list[Cell]) -> list[str]:
    spec = loaded.suite.leaderboard
    if spec.rows is not None:
        return spec.rows
    varied = [k for k in (cells[0].varied if cells else {}) if k != "seed"]
    keys = [k for k in varied if len({repr(c.varied[k]) for c in cells}) > 1]
    return keys + (["arm"] if len(cells[0].arms) > 1 else []) if cells else keys


def _value_of(cell: Cell, key: str) -> Any:
    if key in cell.varied:
        return cell.varied[key]
    return get_dotted(next(iter(cell.arms.values())), key)


def _lookup_keys(cell: Cell, arm: str | None, key: str) -> list[str]:
    if "/" in key or arm is None or list(cell.arms) == [SINGLE_ARM]:
        return [key]
    ref = next(iter(cell.arms))
    return [f"{arm}/{key}", f"{ref}~{arm}/{key}"]


def _stat(values: list[float], stat: str) -> float:
    """``stat`` of a run's series, NaN entries (not measurable at that step) left out."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan
    return {"first": values[0], "last": values[-1], "min": min(values), "max": max(values),
            "mean": sum(values) / len(values)}[stat]


def _cell_value(store_rows: dict[str, Any], series: dict[tuple[str, str], list[float]],
                cell: Cell, arm: str | None, metric: LeaderboardMetric) -> float | None:
    for key in _lookup_keys(cell, arm, metric.key):
        if metric.stat == "last" and key in store_rows["metrics"]:
            return store_rows["metrics"][key]
        if (cell.id, key) in series:
            return _stat(series[(cell.id, key)], metric.stat)
    return None


def _series_map(store: Store, ids: list[str]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for cell, arm, metric, _step, value in store.series(ids):
        key = metric if arm == SINGLE_ARM else f"{arm}/{metric}"
        out[(cell, key)].append(value)
    return out


def _fmt(values: list[float | None], expected: int, diverged: int, agg: str, fmt: str
         ) -> tuple[str, float | None]:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite:
        text = MISSING
        center = None
    else:
        center = statistics.median(finite) if agg == "median" else statistics.fmean(finite)
        text = format(center, fmt)
        if len(finite) > 1 and agg == "mean":
            text += f" ± {format(statistics.stdev(finite), fmt)}"
        if len(finite) < expected:
            text += f" (n={len(finite)}/{expected})"
    if diverged:
        text += f" †{diverged}"
    return text, center


def render(loaded: LoadedSuite, cells: list[Cell], store: Store, out: Path) -> str:
    """Write ``out`` (markdown) and its plots; return the markdown."""
    spec = loaded.suite.leaderboard
    ids = [c.id for c in cells]
    stored = store.cells(ids)
    series = _series_map(store, ids)
    rows = _row_keys(loaded, cells)
    arms = list(cells[0].arms) if cells else [SINGLE_ARM]
    per_arm = "arm" in rows
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in cells:
        col = _value_of(cell, spec.columns) if spec.columns else None
        for arm in (arms if per_arm else [None]):
            key = tuple(arm if r == "arm" else _value_of(cell, r) for r in rows)
            groups[(key, col)].append((cell, arm))
    row_keys = list(dict.fromkeys(k for k, _ in groups))
    col_vals = list(dict.fromkeys(c for _, c in groups))
    headers = list(rows)
    table: list[list[str]] = [[str(v) for v in rk] for rk in row_keys]
    for metric in spec.metrics:
        for col in col_vals:
            label = metric.label or metric.key
            headers.append(f"{label} [{spec.columns}={col}]" if spec.columns else label)
            texts, centers = [], []
            for rk in row_keys:
                members = groups.get((rk, col), [])
                values, diverged = [], 0
                for cell, arm in members:
                    row = stored.get(cell.id)
                    if row is None or row["status"] == "failed":
                        continue
                    if row["status"] == "diverged":
                        diverged += 1
                        continue
                    values.append(_cell_value(row, series, cell, arm, metric))
                text, center = _fmt(values, len(members), diverged, metric.agg, metric.fmt)
                texts.append(text)
                centers.append(center)
            _bold_best(texts, centers, metric.better)
            for line, text in zip(table, texts):
                line.append(text)
    statuses = Counter(stored[i]["status"] if i in stored else "missing" for i in ids)
    md = _header(loaded, cells, stored, statuses)
    md += tabulate(table, headers=headers, tablefmt="github") + "\n"
    md += _legend(spec.metrics)
    out.parent.mkdir(parents=True, exist_ok=True)
    plots = _plots(loaded, cells, store, out)
    md += "".join(f"\n![{key}]({name})\n" for key, name in plots)
    out.write_text(md)
    return md


def _bold_best(texts: list[str], centers: list[float | None], better: str | None) -> None:
    present = [c for c in centers if c is not None]
    if better is None or len(present) < 2:
        return
    best = max(present) if better == "higher" else min(present)
    for i, c in enumerate(centers):
        if c == best:
            texts[i] = f"**{texts[i]}**"


def _header(loaded: LoadedSuite, cells: list[Cell], stored: dict[str, Any],
            statuses: Counter) -> str:
    suite = loaded.suite
    profile = cells[0].profile if cells else "smoke"
    provs = [r["provenance"] for r in stored.values()]
    shas = sorted({(p.get("git_sha") or "unknown")[:10] + ("-dirty" if p.get("git_dirty") else "")
                   for p in provs})
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    lines = [
        f"# {suite.name} — {profile} profile",
        "",
        suite.description.strip(),
        "",
        f"- generated: {dt.date.today().isoformat()} by `geobench leaderboard {loaded.path}`",
        f"- cells: {len(cells)} ({counts})",
        f"- code: {', '.join(shas) or 'n/a'}; torch "
        f"{', '.join(sorted({p.get('torch', '?') for p in provs})) or 'n/a'}; devices "
        f"{', '.join(sorted({p.get('device', '?') for p in provs})) or 'n/a'}",
        "- values: mean ± std over seeds; (n=k/N): only k of N seeds finished; "
        f"†k: k seeds diverged; {MISSING}: no result; **bold**: best in column",
        "",
    ]
    return "\n".join(lines) + "\n"


def _legend(metrics: list[LeaderboardMetric]) -> str:
    if not metrics:
        return ""
    lines = ["", "| column | metric key | over a run | over seeds |", "|---|---|---|---|"]
    lines += [f"| {m.label or m.key} | `{m.key}` | {m.stat} | {m.agg} |" for m in metrics]
    return "\n".join(lines) + "\n"


def _plots(loaded: LoadedSuite, cells: list[Cell], store: Store, out: Path
           ) -> list[tuple[str, str]]:
    spec = loaded.suite.leaderboard
    if not spec.plots or not cells:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in _row_keys(loaded, cells) if r != "arm"]
    made = []
    for plot in spec.plots:
        plot = PlotSpec(key=plot) if isinstance(plot, str) else plot
        key = plot.key
        curves: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        by_id = {c.id: c for c in cells
                 if all(_value_of(c, k) == v for k, v in plot.where.items())}
        for cell_id, arm, _metric, step, value in store.series(list(by_id), key):
            cell = by_id[cell_id]
            label = ", ".join(f"{r}={_value_of(cell, r)}" for r in rows) or "run"
            label += "" if arm == SINGLE_ARM else f" [{arm}]"
            if not math.isnan(value):
                curves[label][step].append(value)
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for label, points in sorted(curves.items()):
            steps = sorted(points)
            ax.plot(steps, [statistics.fmean(points[s]) for s in steps], label=label, lw=1.4)
        if plot.logy:
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel(key)
        ax.set_title(f"{loaded.suite.name}: {key} (mean over seeds)")
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        name = f"{out.stem}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', key)}.png"
        fig.savefig(out.parent / name, dpi=110)
        plt.close(fig)
        made.append((key, name))
    return made
