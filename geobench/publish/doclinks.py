"""Links from a published page to documentation: a relative link where the page lies in the
checkout that holds the documentation (so the link resolves there and on the repository's
site), nothing elsewhere (a third party's page, a temporary folder, an installed geobench
without its docs): a page never names a path of the machine that wrote it."""

from __future__ import annotations

import os
import re
from pathlib import Path

GEOBENCH_DOCS = Path(__file__).resolve().parents[2] / "docs"  # geobench's, in a checkout
REFERENCE = re.compile(r' ?\(docs/([\w.-]+\.md), "([^"]+)"\)')  # (docs/x.md, "Section")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a markdown heading: lower case, punctuation dropped, spaces
    as ``-``."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def doc_target(doc: Path, out_dir: Path, anchor: str = "") -> str | None:
    """The link from a page in ``out_dir`` to the file ``doc`` (``#anchor`` appended):
    relative, where ``doc`` is a file and ``out_dir`` lies inside the folder that holds
    ``doc``'s ``docs/`` folder; else None."""
    if not doc.is_file():
        return None
    doc, here = doc.resolve(), out_dir.resolve()
    if not here.is_relative_to(doc.parent.parent):
        return None
    return os.path.relpath(doc, here) + (f"#{anchor}" if anchor else "")


def section_target(name: str, section: str, out_dir: Path) -> str | None:
    """The link from a page in ``out_dir`` to the first heading of geobench's
    ``docs/<name>`` that starts with ``section`` (to the file where none does); None where
    it would not resolve (``doc_target``)."""
    doc = GEOBENCH_DOCS / name
    target = doc_target(doc, out_dir)
    if target is None:
        return None
    headings = [line.lstrip("#").strip() for line in doc.read_text().splitlines()
                if line.startswith("#")]
    heading = next((h for h in headings if h.startswith(section)), None)
    return target + (f"#{github_anchor(heading)}" if heading else "")


def link_references(text: str, out_dir: Path | None) -> str:
    """Each ``(docs/<name>, "<section>")`` in ``text`` (a section of geobench's
    documentation) as a link to it from a page in ``out_dir``; left out where the link
    would not resolve, or without ``out_dir`` (a page read elsewhere: the results site)."""
    def linked(match: re.Match[str]) -> str:
        name, section = match.groups()
        target = None if out_dir is None else section_target(name, section, out_dir)
        return "" if target is None else f' ([docs/{name}, "{section}"]({target}))'

    return REFERENCE.sub(linked, text)
