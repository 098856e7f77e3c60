"""Print, for a paper's suites, the markdown table of its claims at every scale the store
holds: those that hold at each scale run, then those whose verdict changes; with
``--confirmation``, every claim's exploration verdict beside its confirmation verdict, per
profile with confirmation cells stored (the two tables each paper doc keeps).

    python scripts/scales_table.py suites/collapse.yaml suites/escape.yaml ... \\
        --store results/geobench.sqlite [--confirmation]
"""

from __future__ import annotations

import argparse

from geobench.publish.markdown import markdown_table
from geobench.report.context import confirmation_rows, scale_rows
from geobench.run.store import Store
from geobench.study import Study

CONFIRMATION_COLUMNS = ["claim (suite · profile)", "status (confirmation)",
                        "exploration: raw / Holm", "confirmation: raw / Holm / Holm (paper)",
                        ""]


def scales_table(studies: list[Study], store: Store) -> str:
    """The claims that hold at every scale run, then those that change."""
    profiles, rows = scale_rows(studies, store)
    if not rows:
        return (f"No claim tested at two or more profiles ({', '.join(profiles)}) holds at "
                "every one or changes between them.")
    return markdown_table(rows, ["claim (suite)", *profiles, "verdicts"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="suite YAML files")
    parser.add_argument("--store", default="results/geobench.sqlite", help="results store")
    parser.add_argument("--confirmation", action="store_true",
                        help="exploration verdicts beside confirmation verdicts")
    args = parser.parse_args(argv)
    studies = [Study.open(p) for p in args.suites]
    store = Store(args.store, read_only=True)
    try:
        print(markdown_table(confirmation_rows(studies, store), CONFIRMATION_COLUMNS)
              if args.confirmation else scales_table(studies, store))
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
