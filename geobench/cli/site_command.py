"""``geobench site``: the results site, from the published leaderboards or from a store."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from geobench.cli.command import Command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="site", metavar="FOLDER",
                   help="the folder to build the site in (default: site; rebuilt in place, "
                        "never a folder of other files)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--boards", default="leaderboards",
                        help="the published leaderboards' folder (default: leaderboards)")
    source.add_argument("--store", help="build from this results store instead: every suite "
                                        "of --suites in every profile it holds cells of")
    p.add_argument("--suites", default="suites",
                   help="with --store: the folder of suite YAML files (default: suites)")
    p.add_argument("--papers", help="docs/papers.md for the papers' titles and results in "
                                    "words (default: docs/papers.md beside the leaderboards' "
                                    "or the suites' folder, when there)")


def _papers(args: argparse.Namespace) -> Path | None:
    if args.papers:
        return Path(args.papers)
    base = Path(args.suites if args.store else args.boards).resolve().parent
    found = base / "docs" / "papers.md"
    return found if found.is_file() else None


def site(args: argparse.Namespace) -> int:
    from geobench.site.build import build_site

    start = time.perf_counter()
    if args.store:
        from geobench.contract.manager import registry
        from geobench.run.store import StoreError
        from geobench.site.store_pages import publish_store

        if not Path(args.store).is_file():
            raise StoreError(f"--store {args.store}: no such store")
        with tempfile.TemporaryDirectory() as folder:
            if publish_store(args.store, Path(args.suites), Path(folder), registry()) == 0:
                print(f"--store {args.store}: holds no cell of the suites in {args.suites}",
                      file=sys.stderr)
                return 2
            built = build_site(Path(folder), Path(args.out), _papers(args))
    else:
        built = build_site(Path(args.boards), Path(args.out), _papers(args))
    print(f"wrote {built.pages} pages to {built.out}/ in {time.perf_counter() - start:.1f} s; "
          f"open {built.out}/index.html in a browser, or serve the folder from any static "
          "host")
    return 0


COMMANDS = [Command("site", "build the results site (static HTML) from the leaderboards",
                    _arguments, site)]
