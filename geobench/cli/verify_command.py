"""``geobench verify PAGE... | --all FOLDER``: a published page checked from its files alone
(``geobench.audit.page``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from geobench.audit.page import Inconsistent, page_records, record_of, verify_page
from geobench.cli.command import Command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pages", nargs="*", metavar="PAGE", help="a page's .md or its .json record")
    p.add_argument("--all", metavar="FOLDER", help="every page in FOLDER")


def verify(args: argparse.Namespace) -> int:
    pages = [record_of(Path(p)) for p in args.pages]
    if args.all is not None:
        found = page_records(Path(args.all)) if Path(args.all).is_dir() else []
        if not found:
            print(f"{args.all}: no folder of pages (PAGE.md beside PAGE.json)", file=sys.stderr)
            return 2
        pages += found
    missing = next((p for p in pages if not p.is_file()), None)
    if not pages or missing is not None:
        print(f"{missing}: no page record there" if missing else
              "geobench verify: name a page (PAGE.md or PAGE.json) or --all FOLDER",
              file=sys.stderr)
        return 2
    failed = 0
    for path in pages:
        page = path.with_suffix(".md")
        try:
            done = verify_page(path)
        except Inconsistent as exc:
            print(f"{page}: INCONSISTENT: {exc}")
            failed += 1
            continue
        registered = "no registration" if done.registration is None else (
            f"registration {done.registration} ({done.deciding} deciding cells ran under it)")
        replicated = "" if done.replication is None else (
            f"; replication {done.replication} ({done.replicating} replicating cells ran "
            "under it)")
        print(f"{page}: verified: {done.files} files hashed, {done.values} unit values "
              f"rebuilt, {done.claims} claims recomputed; {registered}{replicated}")
    return 1 if failed else 0


COMMANDS = [
    Command("verify", "check a published page from its files alone: hashes, units, verdicts, "
                      "registration", _arguments, verify, loads_plugins=False),
]
