"""A suite's leaderboard: its claims with verdicts, then tables of the metrics over seeds.

Layout: the claims table first; the main table holds the row keys and at most
``MAX_COLUMNS`` columns in all; further metrics, and every metric pivoted by
``leaderboard.columns``, go into detail tables below it; every number is also written to a
CSV beside the markdown.  A cell reads ``mean ± h (n=k)`` with ``h`` the half-width of the
95% Student-t interval over its ``k`` trial seeds.  Bold marks the best value of a column
only when the metric field declares a direction (``higher`` / ``lower``).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from geobench.contract.api import FieldDoc
from geobench.contract.registry import Registry
from geobench.records import SINGLE_ARM, Cell, Status
from geobench.report.claims import claims_table, evaluate, markdown_table, md_cell
from geobench.report.stats import t_half_width
from geobench.report.values import StoredValues, config_value, field_doc
from geobench.run.store import Store
from geobench.suite import LoadedSuite
from geobench.suite.schema import LeaderboardMetric, PlotSpec

MISSING = "—"
MAX_COLUMNS = 10


def _row_keys(loaded: LoadedSuite, cells: list[Cell]) -> list[str]:
    spec = loaded.suite.leaderboard
    if spec.rows is not None:
        return spec.rows
    varied = [k for k in (cells[0].varied if cells else {}) if k != "trial_seed"]
    keys = [k for k in varied if len({repr(c.varied[k]) for c in cells}) > 1]
    return keys + (["arm"] if len(cells[0].arms) > 1 else []) if cells else keys


@dataclass
class Aggregate:
    """One table cell: the values over trial seeds of one group."""

    values: list[float]
    expected: int
    diverged: int
    agg: str
    nan: int = 0  # seeds whose value is NaN, counted when the column names what NaN means

    @property
    def center(self) -> float | None:
        if not self.values:
            return None
        if self.agg == "median":
            return statistics.median(self.values)
        return statistics.fmean(self.values)

    @property
    def half_width(self) -> float:
        return t_half_width(self.values) if self.agg == "mean" else math.nan

    def text(self, fmt: str, nan: str | None = None) -> str:
        center = self.center
        if center is None and self.nan:
            text = f"{nan} (n={self.nan}/{self.expected})"
        elif center is None:
            text = MISSING
        else:
            text = format(center, fmt)
            if not math.isnan(self.half_width):
                text += f" ± {format(self.half_width, fmt)}"
            n = len(self.values)
            text += f" (n={n})" if n == self.expected else f" (n={n}/{self.expected})"
            text += f" {nan} {self.nan}/{self.expected}" if self.nan else ""
        return text + (f" †{self.diverged}" if self.diverged else "")


def _aggregate(values: StoredValues, members: list[tuple[Cell, str | None]],
               metric: LeaderboardMetric) -> Aggregate:
    found, diverged, nan = [], 0, 0
    for cell, arm in members:
        status = values.status(cell)
        if status == Status.DIVERGED:
            diverged += 1
        if status != Status.COMPLETE:
            continue
        value = values.value(cell, arm, metric.key, metric.stat)
        if value is not None and not math.isnan(value):
            found.append(value)
        elif value is not None and metric.nan is not None:
            nan += 1
    return Aggregate(found, len(members), diverged, metric.agg, nan)


Groups = dict[tuple, list[tuple[Cell, str | None]]]


def _groups(cells: list[Cell], rows: list[str], extra: str | None) -> Groups:
    """Cells (and arms) by their values of the row keys (and ``extra``, when given)."""
    arms = list(cells[0].arms) if cells else [SINGLE_ARM]
    groups: Groups = defaultdict(list)
    for cell in cells:
        for arm in (arms if "arm" in rows else [None]):
            key = tuple(arm if r == "arm" else config_value(cell, r) for r in rows)
            if extra is not None:
                key += (config_value(cell, extra),)
            groups[key].append((cell, arm))
    return groups


def _column(values: StoredValues, groups: Groups, metric: LeaderboardMetric,
            doc: FieldDoc | None) -> list[str]:
    aggs = [_aggregate(values, members, metric) for members in groups.values()]
    texts = [a.text(metric.fmt, metric.nan) for a in aggs]
    centers = [a.center for a in aggs]
    present = [c for c in centers if c is not None]
    if doc is not None and doc.direction != "diagnostic" and len(present) > 1:
        best = max(present) if doc.direction == "higher" else min(present)
        texts = [f"**{t}**" if c == best else t for t, c in zip(texts, centers)]
    return texts


def _table(headers: list[str], keys: list[tuple], columns: list[list[str]]) -> str:
    body = [[str(v) for v in key] + [col[i] for col in columns] for i, key in enumerate(keys)]
    return markdown_table(body, headers)


def render(loaded: LoadedSuite, cells: list[Cell], store: Store, out: Path,
           registry: Registry) -> str:
    """Write ``out`` (markdown), its CSV and its plots; return the markdown."""
    spec = loaded.suite.leaderboard
    values = StoredValues(store, cells)
    rows = _row_keys(loaded, cells)
    main_rows = rows + ([spec.columns] if spec.columns else [])
    docs = [field_doc(registry, cells[0], m.key) if cells else None for m in spec.metrics]
    groups = _groups(cells, main_rows, None)
    keys = list(groups)
    width = max(1, MAX_COLUMNS - len(main_rows))
    columns = [_column(values, groups, m, d) for m, d in zip(spec.metrics, docs)]
    labels = [m.label or m.key for m in spec.metrics]

    out.parent.mkdir(parents=True, exist_ok=True)
    md = f"# {loaded.suite.name} — {cells[0].profile if cells else 'smoke'} profile\n\n"
    if loaded.suite.claims:
        md += "## Claims\n\n" + claims_table(evaluate(loaded, cells, values)) + "\n"
        md += "Verdicts: see docs/claims.md for how they are computed and what they do " \
              "not prove.\n\n"
    md += _header(loaded, cells, values, out.with_suffix(".csv").name)
    md += "## Results\n\n"
    md += _table(main_rows + labels[:width], keys, columns[:width])
    md += _legend(spec.metrics, docs)
    for start in range(width, len(columns), width):
        md += "\n### More results\n\n"
        md += _table(main_rows + labels[start:start + width], keys,
                     columns[start:start + width])
    if spec.columns:
        md += _pivots(values, cells, rows, spec.columns, spec.metrics, docs, labels)
    _write_csv(out.with_suffix(".csv"), values, groups, main_rows, spec.metrics)
    plots = _plots(loaded, cells, store, out)
    md += "".join(f"\n![{key}]({name})\n" for key, name in plots)
    out.write_text(md)
    return md


def _pivots(values: StoredValues, cells: list[Cell], rows: list[str], pivot: str,
            metrics: list[LeaderboardMetric], docs: list[FieldDoc | None],
            labels: list[str]) -> str:
    """One table per metric: the row keys down, the values of ``pivot`` across."""
    grouped = _groups(cells, rows, pivot)
    row_keys = list(dict.fromkeys(k[:-1] for k in grouped))
    pivots = list(dict.fromkeys(k[-1] for k in grouped))
    md = ""
    for metric, doc, label in zip(metrics, docs, labels):
        columns = []
        for value in pivots:
            sub = {rk: grouped.get(rk + (value,), []) for rk in row_keys}
            columns.append(_column(values, sub, metric, doc))
        md += f"\n### {label} by {pivot}\n\n"
        md += _table(rows + [f"{pivot}={v}" for v in pivots], row_keys, columns)
    return md


def _write_csv(path: Path, values: StoredValues, groups: Groups, rows: list[str],
               metrics: list[LeaderboardMetric]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(rows + ["metric", "stat", "agg", "value", "ci95_half_width", "n",
                                "expected", "diverged"])
        for key, members in groups.items():
            for m in metrics:
                a = _aggregate(values, members, m)
                writer.writerow([*key, m.key, m.stat, m.agg,
                                 "" if a.center is None else repr(a.center),
                                 "" if math.isnan(a.half_width) else repr(a.half_width),
                                 len(a.values), a.expected, a.diverged])


def _header(loaded: LoadedSuite, cells: list[Cell], values: StoredValues, csv_name: str
            ) -> str:
    suite = loaded.suite
    provs = [r["provenance"] for r in values.rows.values()]
    shas = sorted({(p.get("git_sha") or "unknown")[:10] + ("-dirty" if p.get("git_dirty") else "")
                   for p in provs})
    statuses = Counter(values.status(c) for c in cells)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    seeds = sorted({c.trial_seed for c in cells})
    lines = [
        suite.description.strip(),
        "",
        f"- generated: {dt.date.today().isoformat()} by `geobench leaderboard {loaded.path}`",
        f"- cells: {len(cells)} ({counts}); trial seeds: {', '.join(map(str, seeds))}",
        f"- code: {', '.join(shas) or 'n/a'}; torch "
        f"{', '.join(sorted({p.get('torch', '?') for p in provs})) or 'n/a'}; devices "
        f"{', '.join(sorted({p.get('device', '?') for p in provs})) or 'n/a'}",
        "- values: mean ± half-width of the 95% Student-t interval over trial seeds "
        f"(n=k/N: k of N seeds have a value); †k: k seeds diverged; {MISSING}: no result; "
        "**bold**: best in a column whose metric has a direction",
        f"- every value as CSV: [{csv_name}]({csv_name})",
        "",
    ]
    return "\n".join(lines) + "\n"


def _legend(metrics: list[LeaderboardMetric], docs: list[FieldDoc | None]) -> str:
    if not metrics:
        return ""
    lines = ["", "| column | metric key | meaning | unit | better | over a run | over seeds |",
             "|---|---|---|---|---|---|---|"]
    for m, d in zip(metrics, docs):
        meaning, unit, better = (d.description, d.unit or "—", d.direction) if d \
            else ("(not declared)", "—", "diagnostic")
        lines.append(f"| {md_cell(m.label or m.key)} | `{m.key}` | {md_cell(meaning)} | "
                     f"{unit} | {better} | {m.stat} | {m.agg} |")
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
                 if all(config_value(c, k) == v for k, v in plot.where.items())}
        for cell_id, arm, _metric, step, value in store.series(list(by_id), key):
            cell = by_id[cell_id]
            label = ", ".join(f"{r}={config_value(cell, r)}" for r in rows) or "run"
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
        ax.set_title(f"{loaded.suite.name}: {key} (mean over trial seeds)")
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        name = f"{out.stem}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', key)}.png"
        fig.savefig(out.parent / name, dpi=110)
        plt.close(fig)
        made.append((key, name))
    return made
