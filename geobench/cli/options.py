"""The argparse types of counts and durations that commands share."""

from __future__ import annotations

import argparse
import math


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
