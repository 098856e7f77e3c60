"""Markdown tables whose cells cannot break the table."""

from __future__ import annotations

from tabulate import tabulate


def md_cell(text: str) -> str:
    """``text`` safe inside a markdown table cell: a '|' would end the cell."""
    return text.replace("|", "\\|")


def markdown_table(rows: list[list[str]], headers: list[str]) -> str:
    """A github markdown table of ``rows`` with every cell and header escaped."""
    return tabulate([[md_cell(c) for c in row] for row in rows],
                    headers=[md_cell(h) for h in headers], tablefmt="github") + "\n"
