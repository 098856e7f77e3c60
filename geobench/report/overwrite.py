"""Rewriting a published page: a page written from another store is refused (unless forced),
so two stores never overwrite each other's pages; the files an earlier write of the page
listed in its record and this one no longer writes (a figure a plot lost) are removed, and
nothing else."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geobench.publish.output import OutputError, describe
from geobench.report.page_record import RECORD_FORMAT, RECORD_SUFFIX
from geobench.run.store import Store


@dataclass(frozen=True)
class StoreMark:
    """What a page records of its store: the store's id (None: a store without one yet),
    its file name and where it lies from the page's folder; ``exists``: False for a store no
    run has created yet."""

    id: str | None
    path: Path
    exists: bool = True

    @classmethod
    def of(cls, store: Store) -> StoreMark:
        return cls(store.identity(), Path(store.path))

    @classmethod
    def at(cls, path: str | Path) -> StoreMark:
        """The mark of the store at ``path`` (read only), or of a store still to be made."""
        if not Path(path).is_file():
            return cls(None, Path(path), exists=False)
        store = Store(path, read_only=True)
        try:
            return cls.of(store)
        finally:
            store.close()

    def record(self, folder: Path) -> dict[str, str | None]:
        """The page record's ``store``: id, file name and its path relative to ``folder``
        where it lies in the folder or beside it (``../geobench.sqlite``), else None (a
        longer way would name the machine's folders)."""
        path = Path(os.path.relpath(os.path.abspath(self.path), os.path.abspath(folder)))
        near = path.parts.count("..") <= 1
        return {"id": self.id, "name": self.path.name, "path": path.as_posix() if near else None}

    def wrote(self, record: dict[str, Any], folder: Path) -> bool:
        """Whether the page of ``record`` (in ``folder``) belongs to this store: by the ids
        where both have one, or because the store that wrote it lay at this store's path (a
        store deleted and made anew there replaces it); else by the file names. A record
        that names no store (written before records did) counts as this store's."""
        theirs = record.get("store")
        if not isinstance(theirs, dict) or not theirs:
            return True
        if isinstance(theirs.get("path"), str) and \
                os.path.abspath(folder / theirs["path"]) == os.path.abspath(self.path):
            return True
        if not self.exists:
            return False
        if self.id and theirs.get("id"):
            return theirs["id"] == self.id
        return theirs.get("name") == self.path.name


def earlier_record(out: Path) -> dict[str, Any] | None:
    """The record beside the page ``out`` (None: none, or a file that is no page record of
    it: not a JSON object of the record format naming ``out`` as its page)."""
    path = out.with_suffix(RECORD_SUFFIX)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT \
            or record.get("page") != out.name:
        return None
    return record


def check_owner(out: Path, mark: StoreMark, force: bool) -> dict[str, Any] | None:
    """Refuse (``OutputError``, one line) to overwrite the page ``out`` when another store
    wrote it, unless ``force``; return its earlier record (None: none)."""
    record = earlier_record(out)
    if record is not None and not force and not mark.wrote(record, out.parent):
        theirs = record["store"]
        named = theirs.get("name") or "?"
        if theirs.get("id"):
            named += f", id {theirs['id'][:12]}"
        raise OutputError(f"{out}: written from another store ({named}); publish this "
                          f"store's ({mark.path.name}) elsewhere with --out, or overwrite it "
                          "with --force")
    return record


def check_before_run(out: Path, store: str | Path, force: bool) -> None:
    """``check_owner`` for a run that will publish ``out`` from the store at ``store`` (made
    by the run where there is none yet), before any cell trains; the store is read only
    where there is a page to compare."""
    if not force and earlier_record(out) is not None:
        check_owner(out, StoreMark.at(store), force)


def earlier_files(record: dict[str, Any]) -> set[str]:
    """The names of the files an earlier write of a page wrote: its ``files``, or (a record
    written before records listed them) the page, record, CSVs and plots it names."""
    if isinstance(record.get("files"), list):
        return {f for f in record["files"] if isinstance(f, str)}
    page = str(record.get("page", ""))
    named = {page, str(Path(page).with_suffix(RECORD_SUFFIX)), record.get("results"),
             record.get("values")}
    for section in record.get("claims") or []:
        named |= {section.get("units"), section.get("forest")}
    named |= {f.get("file") for f in record.get("figures") or []}
    return {n for n in named if isinstance(n, str) and n}


def remove_stale(out: Path, record: dict[str, Any] | None, written: set[str]) -> None:
    """Remove from ``out``'s folder each file ``record`` (the page's earlier record) names
    that this write did not write; only plain names of files there, never anything else."""
    for name in sorted(earlier_files(record) - written if record else ()):
        path = out.parent / name
        if Path(name).name != name or name in (".", "..") or path.is_symlink() \
                or not path.is_file():
            continue
        try:
            path.unlink()
        except OSError as exc:
            raise OutputError(f"{path}: cannot remove this stale file of the page: "
                              f"{describe(exc)}") from None
