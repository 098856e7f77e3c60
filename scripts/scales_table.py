"""Print, for a paper's suites, the markdown table of its claims at every scale the store
holds: those that hold at each scale run, then those whose verdict changes (the table each
paper doc keeps).

    python scripts/scales_table.py suites/collapse.yaml suites/escape.yaml ... \\
        --store results/geobench.sqlite
"""

from __future__ import annotations

import argparse

from geobench.contract.plugins import registry
from geobench.publish.markdown import markdown_table
from geobench.report.context import scale_rows
from geobench.run.store import Store
from geobench.suite import load_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="suite YAML files")
    parser.add_argument("--store", default="results/geobench.sqlite", help="results store")
    args = parser.parse_args(argv)
    store = Store(args.store, read_only=True)
    try:
        profiles, rows = scale_rows([load_suite(p) for p in args.suites], store, registry())
    finally:
        store.close()
    if not rows:
        print(f"No claim tested at two or more profiles ({', '.join(profiles)}) holds at "
              "every one or changes between them.")
        return 0
    print(markdown_table(rows, ["claim (suite)", *profiles, "verdicts"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
