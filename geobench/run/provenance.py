"""What produced a result: code revision and the versions that change numbers."""

from __future__ import annotations

import platform
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import torch

from geobench.version import __version__


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


@cache
def provenance() -> dict[str, Any]:
    """git sha and dirty flag of the geobench checkout (None outside git), and versions."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "git_sha": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "geobench": __version__,
        "host": platform.node(),
    }
