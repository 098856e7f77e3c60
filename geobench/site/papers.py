"""The papers' results in words, from ``docs/papers.md``: each paper's title (its
``**P1 — "Title"**`` line) and each result section's first paragraph (``## P1 Sec 4``), so
a paper's page can say what each statement is about."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

TITLE = re.compile(r'^\*\*(\w+) — "([^"]+)"\*\*', re.M)


@dataclass
class Papers:
    """Titles by paper id and first paragraphs by section (in the file's order)."""

    titles: dict[str, str] = field(default_factory=dict)
    sections: dict[str, str] = field(default_factory=dict)


def read_papers(path: Path | None) -> Papers:
    """``path``'s titles and sections; empty without the file."""
    if path is None or not path.is_file():
        return Papers()
    text = path.read_text()
    papers = Papers({m.group(1): m.group(2) for m in TITLE.finditer(text)})
    for block in text.split("\n## ")[1:]:
        heading, _, body = block.partition("\n")
        paragraph = body.strip().split("\n\n", 1)[0]
        papers.sections[heading.strip()] = " ".join(paragraph.split())
    return papers


def section_of(source: str) -> str:
    """The section a claim's ``source`` cites: its text up to the first '(' or ','."""
    return re.split(r"[(,]", source)[0].strip()
