"""A page's ``<stem>_cells.csv``: one row per stored cell the page reads, saying what it ran
under — its id, trial seed and status, when it started and finished (UTC, ISO 8601), the code
commit (``-dirty``: with uncommitted changes; empty outside git) and the plugins with their
versions, the sha256 of the registration in force (``geobench.study.registered``; empty:
none) and the digest of every claim definition in force (JSON, claim id -> digest; empty:
not recorded), each as first stored (a rerun keeps them); then the digest of its values now
(``StoredValues.digest``) and as the page first published them (``published``, carried over
from the page's earlier write): where the two differ, a rerun revised the cell after
publication (``report.revised``)."""

from __future__ import annotations

import csv
import io
import json

from geobench.claims.values import StoredValues
from geobench.records import Cell, plugins, plugins_text, utc_iso

CELL_COLUMNS = ["cell", "trial_seed", "status", "started", "finished", "code", "plugins",
                "registration", "claims", "values", "published"]


def cells_csv(cells: list[Cell], values: StoredValues, published: dict[str, str]) -> str:
    """The rows of ``cells`` that the store holds, in ``cells``' order, as CSV text;
    ``published``: cell id -> its values' digest as an earlier write of the page published
    them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CELL_COLUMNS)
    for cell in cells:
        row = values.rows.get(cell.id)
        if row is None:
            continue
        prov, claims = row["provenance"], values.claims(cell)
        code = prov.get("git_sha") or ""
        writer.writerow([
            cell.id, cell.trial_seed, row["status"],
            utc_iso(row["started"]) if row.get("started") else "",
            utc_iso(row["finished"]) if row.get("finished") else "",
            code + ("-dirty" if code and prov.get("git_dirty") else ""),
            plugins_text(plugins([row["config"].get("versions", {})])),
            values.registration(cell) or "",
            "" if claims is None else json.dumps(claims, sort_keys=True),
            values.digest(cell), published.get(cell.id) or values.digest(cell)])
    return out.getvalue()
