"""The argparse types of counts and durations, and the help of ``--out``, that commands
share: every command's ``--out`` is a folder."""

from __future__ import annotations

import argparse
import math

OUT_HELP = ("the folder to publish into: the page is FOLDER/<suite>[_<profile>].md, its CSV, "
            "claims files, figures and record beside it (default: leaderboards/ beside the "
            "store; a path ending in .md names the page itself)")


def seconds(text: str) -> float:
    """A finite number of seconds >= 1 (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: a finite number of seconds >= 1")
    return value


def count(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: an integer >= 1")
    return int(text)
