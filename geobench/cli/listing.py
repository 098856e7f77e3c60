"""The text of ``geobench list``: each kind's components in a name column sized to their
names (a longer name on a line of its own), descriptions, params and fields wrapped to
the terminal's width (``COLUMNS``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable

from geobench.contract.param_text import param_rows
from geobench.contract.registry import Entry

NAME_COLUMN = 24
"""Widest name column; a longer name gets a line of its own."""
MIN_WIDTH = 40
"""Narrowest layout: below it lines are this wide."""


def width() -> int:
    """The terminal's width (``COLUMNS`` when set; 80 when output is not a terminal)."""
    return max(shutil.get_terminal_size().columns, MIN_WIDTH)


def size(text: str) -> int:
    """A line's width in UTF-8 bytes: never less than its characters, so a line within the
    width fits whichever a tool counts."""
    return len(text.encode())


def wrap(text: str, cols: int, first: str, rest: str, last: str = "") -> list[str]:
    """``text``'s words, then ``last`` kept whole where it fits, in lines of at most
    ``cols``: the first after ``first``, the others after ``rest``; a word longer than a
    line is cut."""
    lines, line, empty = [], first, True
    for word in text.split() + ([last] if last else []):
        while word:
            joined = line + ("" if empty else " ") + word
            if size(joined) <= cols:
                line, empty, word = joined, False, ""
            elif not empty:
                lines.append(line)
                line, empty = rest, True
            else:  # the word alone is too long: cut it at the width
                cut = 1
                while cut < len(word) and size(line + word[:cut + 1]) <= cols:
                    cut += 1
                lines.append(line + word[:cut])
                line, word = rest, word[cut:]
    if not empty or not lines:
        lines.append(line)
    return lines


def kind_lines(kind: str, entries: Iterable[Entry], cols: int) -> list[str]:
    """``kind:`` and each of its components: name, description, origin, params, fields."""
    entries = list(entries)
    column = max((len(e.name) for e in entries if len(e.name) <= NAME_COLUMN), default=0)
    pad = " " * (2 + column + 2)
    lines = [f"{kind}:"]
    for e in entries:
        origin = f"[{e.origin} {e.version}]"
        if len(e.name) > column:
            lines.append(f"  {e.name}")
            lines += wrap(e.doc, cols, pad, pad, origin)
        else:
            lines += wrap(e.doc, cols, f"  {e.name:<{column}}  ", pad, origin)
        for row in param_rows(e.params):
            doc = f"  — {row.doc}" if row.doc else ""
            lines += wrap(row.signature() + doc, cols, " " * 6, " " * 10)
        for name, d in e.fields.items():
            unit = f" [{d.unit}]" if d.unit else ""
            lines += wrap(f"-> {name}{unit} ({d.direction}): {d.description}", cols,
                          " " * 6, " " * 10)
    return lines
