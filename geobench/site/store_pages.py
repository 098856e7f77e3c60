"""The pages a store can publish, for ``geobench site --store``: every suite of a folder in
every profile the store holds cells of, each written as ``geobench leaderboard`` writes it
(markdown, record, CSVs, plots) into one folder."""

from __future__ import annotations

import sys
from pathlib import Path

from geobench.claims.values import StoredValues
from geobench.contract.registry import Registry
from geobench.report.leaderboard import render
from geobench.report.paths import stem
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite.yamlio import SuiteError


def publish_store(store_path: str, suites: Path, folder: Path, registry: Registry) -> int:
    """Write into ``folder`` the page of every suite in ``suites`` (``*.yaml``) and profile
    with stored cells; return how many."""
    if not suites.is_dir():
        raise SuiteError(f"--suites {suites}: no such folder of suite YAML files")
    store = Store(store_path, read_only=True)
    written = 0
    try:
        for path in sorted(suites.glob("*.yaml")):
            for study in Study.open(path, registry=registry).each_profile():
                if not StoredValues(store, study.cells).rows:
                    continue
                out = folder / f"{stem(study.name, study.profile)}.md"
                print(f"publishing {study.name} · {study.profile}", file=sys.stderr)
                render(study, store, out)
                written += 1
    finally:
        store.close()
    return written
