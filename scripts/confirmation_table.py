"""Print, for a paper's suites, the markdown table of every claim's verdicts on the
exploration seeds beside those on the confirmation seeds, per profile the store holds
confirmation cells of (the table each paper doc keeps).

    python scripts/confirmation_table.py suites/collapse.yaml suites/escape.yaml ... \\
        --store results/geobench.sqlite
"""

from __future__ import annotations

import argparse

from geobench.contract.plugins import registry
from geobench.publish.markdown import markdown_table
from geobench.report.context import confirmation_rows
from geobench.run.store import Store
from geobench.suite import load_suite

COLUMNS = ["claim (suite · profile)", "status (confirmation)", "exploration: raw / Holm",
           "confirmation: raw / Holm / Holm (paper)", ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="suite YAML files")
    parser.add_argument("--store", default="results/geobench.sqlite", help="results store")
    args = parser.parse_args(argv)
    store = Store(args.store, read_only=True)
    try:
        rows = confirmation_rows([load_suite(p) for p in args.suites], store, registry())
    finally:
        store.close()
    print(markdown_table(rows, COLUMNS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
