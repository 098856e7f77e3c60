"""Where a suite's published files go: the ``--out`` folder, by default ``leaderboards/``
beside the store, each named for the suite and, outside smoke, its profile
(``<suite>[_<profile>]``); and how a page names a path."""

from __future__ import annotations

import os
import re
from pathlib import Path

from geobench.suite import LoadedSuite
from geobench.suite.yamlio import SuiteError


def stem(suite: str, profile: str) -> str:
    """``<suite>`` for the smoke profile, else ``<suite>_<profile>``."""
    return suite if profile == "smoke" else f"{suite}_{profile}"


def shown_path(path: str | Path) -> str:
    """``path`` as a published page names it: relative to the working folder where it lies
    inside it (``suites/collapse.yaml``), else its file name alone, so a page never names a
    path of the machine that wrote it."""
    full = Path(os.path.abspath(path))
    here = Path.cwd()
    return full.relative_to(here).as_posix() if full.is_relative_to(here) else full.name


ABSOLUTE = re.compile(r"(?<![\w.~])/(?:[^\s'\"(),:;]+/)+[^\s'\"(),:;]*")
"""An absolute POSIX path of at least two parts inside a text."""


def shown_text(text: str) -> str:
    """``text`` (an error message) with each absolute path in it as ``shown_path`` names it,
    so a published page quotes an error without the machine's folders."""
    return ABSOLUTE.sub(lambda m: shown_path(m.group(0)), text)


def board_folder(store: str | Path) -> Path:
    """``leaderboards/`` beside the store: the leaderboard's folder, where figures go too
    (its images link there)."""
    return Path(store).parent / "leaderboards"


def leaderboard_path(loaded: LoadedSuite, profile: str, store: str | Path,
                     out: str | Path | None = None) -> Path:
    """``<folder>/<suite>[_<profile>].md``, its CSV, claims files and figures beside it:
    the folder is ``out`` (``--out``), else ``leaderboards/`` beside the store, and the page
    may not leave it. An ``out`` ending in ``.md`` names the page itself."""
    if out and Path(out).suffix == ".md":
        return Path(out)
    folder = Path(out) if out else board_folder(store)
    path = folder / f"{stem(loaded.suite.name, profile)}.md"
    if Path(os.path.normpath(path)).parent != Path(os.path.normpath(folder)):  # no symlinks
        raise SuiteError(f"{loaded.path}: leaderboard path {path} leaves {folder}; name the "
                         "suite and profile with [A-Za-z0-9_.-] only, or give --out PAGE.md")
    return path
