"""A suite's leaderboard: its claims with verdicts, then tables of the metrics over seeds.

Layout: the claims table first; then either the main table (the row keys and at most
``MAX_COLUMNS`` columns in all; further metrics, and every metric pivoted by
``leaderboard.columns``, go into detail tables below it) or, with ``leaderboard.tables``,
one titled table per entry; every number is also written to a CSV beside the markdown.
A cell reads ``mean ± h (n=k)`` with ``h`` the half-width of the 95% Student-t interval
over its ``k`` trial seeds.  Bold marks the best value of a column only when the metric
field declares a direction (``higher`` / ``lower``).  Tables: ``geobench.report.tables``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geobench.claims.claims_table import (
    CONFIRMATION,
    EXPLORATION,
    REPLICATION,
    UNCONFIRMED,
    Section,
    claims_section,
)
from geobench.claims.family import PaperFamily
from geobench.claims.values import StoredValues, declared
from geobench.claims.verdicts import Verdict, attach_replication
from geobench.contract.interfaces import FieldDoc
from geobench.publish.markdown import markdown_table, md_cell
from geobench.publish.output import Content, check_writable, figure_bytes, write_files
from geobench.records import SINGLE_ARM, Cell
from geobench.report import tables
from geobench.report.cell_rows import cells_csv
from geobench.report.overwrite import StoreMark, check_owner, remove_stale
from geobench.report.page_header import header, named_registration
from geobench.report.page_record import (
    RECORD_SUFFIX,
    page_record,
    section_record,
)
from geobench.report.paths import leaderboard_path, shown_text
from geobench.report.results import values_csv_gz
from geobench.report.retired import check_kept, retired_records, retired_section
from geobench.report.revised import published_digests, revised_section, verdicts_before
from geobench.report.tables import (
    FAILED_MARK,
    Groups,
    aggregate,
    cell_text,
    row_keys,
)
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import LoadedSuite, get_dotted
from geobench.suite.schema import LeaderboardMetric, LeaderboardSpec, PlotSpec
from geobench.suite.where import config_value, named_arms, selects

VALUES_SUFFIX = "_values.csv.gz"  # every stored value of the cells, beside the page
CELLS_SUFFIX = "_cells.csv"  # what each cell ran under (report.cell_rows)

CsvPart = tuple[str | None, list[str], Groups, list[LeaderboardMetric]]
"""What the CSV holds of one table: its title (None: the main table), row keys, groups and
metrics."""


def publish(study: Study, store_path: str | Path, out: str | Path | None = None,
            force: bool = False) -> Path:
    """Publish ``study``'s leaderboard from the store at ``store_path`` (read only) to
    ``out`` (default: ``leaderboards/<suite>[_<profile>].md`` beside the store), as
    ``render`` writes it; return the markdown's path."""
    path = leaderboard_path(study.loaded, study.profile, store_path, out)
    store = Store(store_path, read_only=True)
    try:
        render(study, store, path, force)
    finally:
        store.close()
    return path


def render(study: Study, store: Store, out: Path, force: bool = False) -> str:
    """Write ``out`` (markdown), its CSV, its claims' files, its plots and its record
    (``<stem>.json``, ``report.page_record``), all or none (``write_files``), then remove
    the files an earlier write of the page listed and this one does not write; return the
    markdown. A page another store wrote is refused unless ``force``
    (``report.overwrite``)."""
    loaded, registry = study.loaded, study.registry
    replicating = _replication_stored(study, store)
    cells = study.cells if replicating else study.seed_cells("all")
    mark = StoreMark.of(store)
    earlier = check_owner(out, mark, force)
    check_kept(out, earlier, loaded)
    spec = loaded.suite.leaderboard
    values = StoredValues(store, cells)
    rows = row_keys(loaded, cells)

    def doc(metric: LeaderboardMetric) -> FieldDoc | None:
        return declared(registry, cells, metric.key)

    check_writable(out)
    files: dict[Path, Content] = {}
    md = f"# {loaded.suite.name} — {study.profile} profile\n\n"
    sections = []
    published = published_digests(out, earlier)
    if loaded.suite.claims:
        confirmed = study.has_confirmation
        changed = {c.id for c in cells if published.get(c.id) not in (None, values.digest(c))}
        verdicts, family = study.published_verdicts(store, values,
                                                    (changed, verdicts_before(earlier)))
        replicated = study.verdicts(store, "replicate", values) if replicating else None
        if replicated is not None:
            attach_replication(verdicts, replicated)
        section = CONFIRMATION if confirmed else UNCONFIRMED
        md += claims_section(verdicts, out, loaded.path, loaded.suite.name, files, section,
                             family)
        sections.append(_section(verdicts, section, out, files,
                                 "confirm" if confirmed else "explore", family))
        if replicated is not None:
            md += claims_section(replicated, out, loaded.path, loaded.suite.name, files,
                                 REPLICATION)
            sections.append(_section(replicated, REPLICATION, out, files, "replicate", None))
        if confirmed:
            explore = study.verdicts(store, "explore", values)
            md += claims_section(explore, out, loaded.path, loaded.suite.name, files,
                                 EXPLORATION)
            sections.append(_section(explore, EXPLORATION, out, files, "explore", None))
    md += retired_section(loaded.suite, out.stem)
    md += revised_section(loaded.suite, out.stem)
    stored = out.with_name(f"{out.stem}{VALUES_SUFFIX}")
    files[stored] = values_csv_gz(store.path, cells)
    ran_under = out.with_name(f"{out.stem}{CELLS_SUFFIX}")
    files[ran_under] = cells_csv(cells, values, published)
    registration = named_registration(study, out)
    replication = named_registration(study, out, "replicate")
    md += header(loaded, cells, values, out, stored.name, ran_under.name, registration,
                 replication)
    md += "## Results\n\n"
    results, parts = (_main(values, cells, rows, spec, doc) if spec.tables is None
                      else _titled(values, cells, rows, spec, doc))
    md += results + _failed_metrics(values, cells)
    files[out.with_suffix(".csv")] = _csv_text(values, parts, doc)
    figures = []
    for key, name, png in _plots(loaded, cells, store, out):
        files[out.with_name(name)] = png
        figures.append((key, name))
        md += f"\n![{key}]({name})\n"
    files[out] = md
    record_path = out.with_suffix(RECORD_SUFFIX)
    names = {path.name for path in [*files, record_path]}
    hashes = {path.name: hashlib.sha256(
        content.encode() if isinstance(content, str) else content).hexdigest()
        for path, content in sorted(files.items())}
    record = page_record(loaded, study.profile, cells, values, out, sections, figures,
                         stored.name, mark.record(out.parent), sorted(names), registration,
                         ran_under.name, hashes, retired_records(loaded.suite, out.stem),
                         replication)
    files[record_path] = json.dumps(record, indent=1) + "\n"
    write_files(files)
    remove_stale(out, earlier, names)
    return md


def _replication_stored(study: Study, store: Store) -> bool:
    """Whether the store holds a cell of the profile's replication seeds (they run only when
    asked for: until then a page shows neither them nor a replication)."""
    return study.has_replication and bool(
        store.cells([c.id for c in study.seed_cells("replicate")]))


def _section(verdicts: list[Verdict], section: Section, out: Path,
             files: dict[Path, Content], seeds: str, family: PaperFamily | None
             ) -> dict[str, Any]:
    forest = out.with_name(f"{out.stem}{section.suffix}.png") in files
    return section_record(verdicts, section, out, seeds, family, forest)


def _main(values: StoredValues, cells: list[Cell], rows: list[str], spec: LeaderboardSpec,
          doc: Callable[[LeaderboardMetric], FieldDoc | None]) -> tuple[str, list[CsvPart]]:
    """The main table, its legend, its continuations and the pivoted detail tables."""
    main_rows = rows + ([spec.columns] if spec.columns else [])
    docs = [doc(m) for m in spec.metrics]
    groups = tables.group(cells, main_rows)
    columns = [tables.column(values, groups, m, d) for m, d in zip(spec.metrics, docs)]
    stated, blocks = tables.markdown(main_rows, list(groups), _labels(spec.metrics), columns,
                                     spec.labels)
    md = stated + blocks[0] + _legend(spec.metrics, docs)
    md += "".join("\n### More results\n\n" + block for block in blocks[1:])
    if spec.columns:
        md += _pivots(values, cells, rows, spec, docs)
    return md, [(None, main_rows, groups, spec.metrics)]


def _titled(values: StoredValues, cells: list[Cell], rows: list[str], spec: LeaderboardSpec,
            doc: Callable[[LeaderboardMetric], FieldDoc | None]) -> tuple[str, list[CsvPart]]:
    """One ``### <title>`` table per entry of ``leaderboard.tables`` (with continuations),
    then one legend of every metric."""
    md, parts, legend = "", [], {}
    for table in spec.tables or []:
        table_rows = rows if table.rows is None else table.rows
        metrics = spec.metrics if table.metrics is None else table.metrics
        chosen, arms = tables.selected(cells, table.where)
        groups = tables.ordered(tables.group(chosen, table_rows, arms=arms), table_rows,
                                table.where)
        columns = [tables.column(values, groups, m, doc(m)) for m in metrics]
        stated, blocks = tables.markdown(table_rows, list(groups), _labels(metrics), columns,
                                         spec.labels)
        md += f"### {table.title}\n\n" + stated + blocks[0]
        md += "".join(f"\n### {table.title} (continued)\n\n" + block for block in blocks[1:])
        md += "\n"
        parts.append((table.title, table_rows, groups, metrics))
        for m in metrics:
            legend.setdefault((_labels([m])[0], m.key, m.stat, m.agg), m)
    unique = list(legend.values())
    md += "### Columns\n" + _legend(unique, [doc(m) for m in unique])
    return md, parts


def _labels(metrics: list[LeaderboardMetric]) -> list[str]:
    return [m.label or m.key for m in metrics]


def _pivots(values: StoredValues, cells: list[Cell], rows: list[str], spec: LeaderboardSpec,
            docs: list[FieldDoc | None]) -> str:
    """One table per metric: the row keys down, the values of ``spec.columns`` across."""
    pivot = spec.columns or ""
    grouped = tables.group(cells, rows, pivot)
    row_values = list(dict.fromkeys(k[:-1] for k in grouped))
    pivots = list(dict.fromkeys(k[-1] for k in grouped))
    name = spec.labels.get(pivot, pivot)
    md = ""
    for metric, doc, label in zip(spec.metrics, docs, _labels(spec.metrics)):
        columns = []
        for value in pivots:
            sub = {rk: grouped.get(rk + (value,), []) for rk in row_values}
            columns.append(tables.column(values, sub, metric, doc))
        stated, blocks = tables.markdown(rows, row_values, [f"{name}={v}" for v in pivots],
                                         columns, spec.labels, max_columns=None)
        md += f"\n### {label} by {name}\n\n" + stated + blocks[0]
    return md


def _csv_text(values: StoredValues, parts: list[CsvPart],
              doc: Callable[[LeaderboardMetric], FieldDoc | None]) -> str:
    """Every value: the row keys (with titled tables: the table's title, then the union of
    their row keys, blank where a table has no such key), metric, stat, agg, value, ...,
    and ``shown``, the cell as the page prints it (without bold)."""
    titled = any(title is not None for title, _, _, _ in parts)
    keys = list(dict.fromkeys(k for _, rows, _, _ in parts for k in rows)) if titled \
        else [k for _, rows, _, _ in parts[:1] for k in rows]
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow((["table"] if titled else []) + keys + [
        "metric", "stat", "agg", "value", "ci95_half_width", "n", "expected", "diverged",
        "shown"])
    for title, rows, groups, metrics in parts:
        for key, members in groups.items():
            named = dict(zip(rows, key))
            cells = [named.get(k, "") for k in keys] if titled else list(key)
            for m in metrics:
                a = aggregate(values, members, m)
                writer.writerow([*([title] if titled else []), *cells, m.key, m.stat,
                                 m.agg, "" if a.center is None else repr(a.center),
                                 "" if math.isnan(a.half_width) else repr(a.half_width),
                                 len(a.values), a.expected, a.diverged,
                                 cell_text(a, m, doc(m))])
    return buffer.getvalue()


def _failed_metrics(values: StoredValues, cells: list[Cell]) -> str:
    """``## Failed metrics``: each metric that raised on an arm (cell, varied keys, arm,
    metric, step, error); empty when none did."""
    failed = values.failures(cells)
    if not failed:
        return ""
    rows = [[cell.id, cell.label(), f.arm, f.metric, str(f.step), shown_text(f.error)]
            for cell, f in failed]
    return ("\n## Failed metrics\n\n"
            f"A metric that raised on an arm has no value there ({FAILED_MARK}k in a table: "
            "it failed in k of the trial seeds); the cell's other arms and metrics kept "
            "theirs. `geobench results SUITE --failed` prints each traceback.\n\n"
            + markdown_table(rows, ["cell", "varied", "arm", "metric", "step", "error"]))


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


def x_factor(cell: Cell, arm: str, key: str | None) -> float:
    """What the step is multiplied by on a plot's x axis: ``key``'s value in ``arm`` of
    ``cell`` (1 without ``key``)."""
    if key is None:
        return 1.0
    value = get_dotted(cell.arms.get(arm, {}), key)
    return float(config_value(cell, key) if value is None else value)


def plot_curves(cells: list[Cell], store: Store, plot: PlotSpec, rows: list[str],
                labels: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    """The curves of ``plot``: label -> (x, mean over trial seeds) points, x = step (times
    the value of ``plot.x``), NaN values left out."""
    curves: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_id = {c.id: c for c in cells if selects(plot.where, c)}
    arms = named_arms(plot.where)
    for cell_id, arm, _metric, step, value in store.series(list(by_id), plot.key):
        if arms != [None] and arm not in arms:
            continue
        cell = by_id[cell_id]
        label = ", ".join(f"{labels.get(r, r)}={config_value(cell, r)}" for r in rows) or "run"
        label += "" if arm == SINGLE_ARM else f" [{arm}]"
        if not math.isnan(value):
            curves[label][step * x_factor(cell, arm, plot.x)].append(value)
    return {label: [(x, statistics.fmean(points[x])) for x in sorted(points)]
            for label, points in sorted(curves.items())}


def _plots(loaded: LoadedSuite, cells: list[Cell], store: Store, out: Path
           ) -> list[tuple[str, str, bytes]]:
    """(series key, file name beside ``out``, PNG bytes) of each plot with something to
    draw."""
    spec = loaded.suite.leaderboard
    if not spec.plots or not cells:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in row_keys(loaded, cells) if r != "arm"]
    made = []
    for plot in spec.plots:
        plot = PlotSpec(key=plot) if isinstance(plot, str) else plot
        key = plot.key
        curves = plot_curves(cells, store, plot, rows, spec.labels)
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for label, points in curves.items():
            ax.plot([x for x, _ in points], [y for _, y in points], label=label, lw=1.4)
        if plot.logy:
            ax.set_yscale("log")
        ax.set_xlabel(plot.xlabel or (f"step × {plot.x}" if plot.x else "step"))
        ax.set_ylabel(key)
        ax.set_title(f"{loaded.suite.name}: {key} (mean over trial seeds)")
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        name = f"{out.stem}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', key)}.png"
        made.append((key, name, figure_bytes(fig, dpi=110)))
        plt.close(fig)
    return made
