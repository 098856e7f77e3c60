"""The one writer of every file geobench's commands publish (leaderboards, their CSVs and
figures, plugin figures, the plugin scaffold): all of a command's files are written to
temporary files beside their targets first and renamed over them only once every one is
complete, so a failure while writing (a full disk, a refused name) leaves the old files (or
none) and nothing half-written; only the renames, which do not fail once their folder
takes a new file, come after. Every problem is one line naming the file
(``OutputError``; the CLI exits 2)."""

from __future__ import annotations

import errno
import io
import os
import tempfile
from pathlib import Path
from typing import Any

Content = str | bytes
UMASK = os.umask(0o022)
os.umask(UMASK)  # read once (reading sets it): published files get the usual permissions


class OutputError(RuntimeError):
    """A file a command publishes cannot be written; one line naming it."""


def describe(exc: OSError) -> str:
    """What an ``OSError`` on an output file means, in a few words."""
    meanings = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                errno.ENAMETOOLONG: "the file name is too long",
                errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                errno.EROFS: "the file system is read-only",
                errno.EISDIR: "a folder is in the way", errno.ENOTDIR: "a file is in the way"}
    return meanings.get(exc.errno, exc.strerror or type(exc).__name__)


def check_writable(path: Path) -> None:
    """Refuse, before any work, a target that cannot be written: a folder, a read-only
    file, a name longer than the file system allows, a folder that is not writable."""
    parent = _existing_parent(path)
    longest = _name_max(parent)
    if len(path.name.encode()) > longest:
        raise OutputError(f"{path.name[:40]}...: cannot write: the file name has "
                          f"{len(path.name.encode())} bytes; the file system allows {longest}")
    if path.is_dir():
        raise OutputError(f"{path}: cannot write: a folder is in the way; give a file path")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"{path}: cannot write: the file is read-only")
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: cannot write: {parent} is not a writable folder")


def _existing_parent(path: Path) -> Path:
    parent = path.parent.absolute()
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def write_files(files: dict[Path, Content]) -> None:
    """Write the files of ``files`` (path -> text or bytes): each to a temporary file in its
    target's folder, then, once all are complete, renamed over its target, so a failure
    while writing changes no target. The temporary files are removed on any failure."""
    staged: list[tuple[str, Path]] = []
    current: Path | None = None
    try:
        for current, content in files.items():
            check_writable(current)
            staged.append((_stage(current, content), current))
        for tmp, current in staged:
            os.replace(tmp, current)
    except OSError as exc:
        raise OutputError(f"{current}: cannot write: {describe(exc)}") from None
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _stage(path: Path, content: Content) -> str:
    """``content`` in a new temporary file beside ``path`` (flushed to disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".geobench-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content.encode() if isinstance(content, str) else content)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~UMASK)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def figure_bytes(fig: Any, **savefig: Any) -> bytes:
    """A matplotlib figure rendered as PNG bytes (to publish with ``write_files``)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **savefig)
    return buffer.getvalue()
