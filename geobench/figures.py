"""What a plugin's figure command needs, at its stable import path: the options every
figure command shares, the suite's cells with what the store holds of them, where figures
go by default, the result keys and config values of a cell, and the one file writer.

A figure command is registered with ``cli.add(name, summary, arguments, main)``::

    def arguments(parser):
        figure_options(parser, __doc__)

    def main(args):
        stored = read_stored(args, series=["neuron_histogram.weights"])
        ...
        write_files({figure_path(args, stored, "x"): png})

Problems are raised as ``SuiteError`` (no such suite file, an invalid suite or profile) and
``StoreError`` (no such store, not a store), which ``geobench`` prints as one line and
answers with exit status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from geobench.publish.output import figure_bytes, write_files
from geobench.records import SINGLE_ARM, Cell, cross_arm, metric_key
from geobench.report.paths import board_folder as figure_folder
from geobench.report.stored import SeriesRow, StoredSuite, stored_suite
from geobench.study.arguments import open_study, suite_options
from geobench.suite import get_dotted

__all__ = ["Cell", "SINGLE_ARM", "SeriesRow", "StoredSuite", "cross_arm", "figure_bytes",
           "figure_folder", "figure_options", "figure_path", "get_dotted", "metric_key",
           "read_stored", "write_files"]


OUT_HELP = ("the folder of the figures, each <suite>[_<profile>]_<name>.png (default: "
            "leaderboards/ beside the store, where the page links them; a path ending in "
            ".png names the figure itself)")


def figure_options(parser: argparse.ArgumentParser, description: str | None,
                   out_help: str = OUT_HELP, out_required: bool = False) -> None:
    """The options of every figure command: the suite path, ``--profile`` (default smoke),
    ``--set``, ``--only``, ``--cell-limit`` and ``--store`` as ``geobench claims`` takes
    them, and ``--out``: a folder, as every command's (a ``Path``; None when not given and
    not required; ``figure_path`` reads it)."""
    parser.description = description
    suite_options(parser)
    parser.add_argument("--out", type=Path, required=out_required, metavar="FOLDER",
                        help=out_help)


def figure_path(args: argparse.Namespace, stored: StoredSuite, name: str) -> Path:
    """Where the figure ``name`` goes: ``<suite>[_<profile>]_<name>.png`` in the ``--out``
    folder, by default ``leaderboards/`` beside the store; an ``--out`` ending in ``.png``
    names the figure itself."""
    if args.out is not None and Path(args.out).suffix == ".png":
        return Path(args.out)
    return Path(args.out or figure_folder(args.store)) / f"{stored.stem}_{name}.png"


def read_stored(args: argparse.Namespace, series: Iterable[str] = ()) -> StoredSuite:
    """The suite and cells ``figure_options`` select (the profile's, under ``--set`` and
    ``--only``, checked as every command checks them) with what ``--store`` holds of them
    and their ``series`` (``<metric>.<field>`` names); the store is closed on return."""
    return stored_suite(open_study(args), args.store, series)
