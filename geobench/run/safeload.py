"""Loading pickles only from private paths: unpickling runs code, so a result file (and its
folder) must belong to the current user and be writable by nobody else."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path
from typing import Any

from geobench.suite.yamlio import SuiteError


class UnsafePathError(SuiteError):
    """A path others could have written to; the command line reports it in one line."""


def check_private(path: str | Path, st: os.stat_result | None = None) -> None:
    """Raise UnsafePathError unless ``path`` (its stat result ``st``, if given) is owned by
    the current user and neither group- nor world-writable."""
    st = st or os.stat(path)
    if st.st_uid != os.getuid():
        raise UnsafePathError(f"refusing to load from {path}: owned by uid {st.st_uid}, not by "
                              f"the current user (uid {os.getuid()})")
    if st.st_mode & 0o022:
        raise UnsafePathError(f"refusing to load from {path}: writable by group or others "
                              f"(mode {stat.S_IMODE(st.st_mode):o}); run chmod go-w on it")


class UnreadableFileError(SuiteError):
    """A private file that does not unpickle (truncated, corrupt, from other code)."""


def load_pickle(path: str | Path) -> Any:
    """Unpickle ``path`` after checking its folder and the opened file with ``check_private``;
    a file that does not unpickle is an ``UnreadableFileError``."""
    path = Path(path)
    check_private(path.parent)
    with open(path, "rb") as fh:
        check_private(path, os.fstat(fh.fileno()))
        try:
            return pickle.load(fh)
        except Exception as exc:  # pickle raises many kinds on a corrupt file
            raise UnreadableFileError(f"cannot load {path}: {type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
