"""The peak resident memory of the process that runs a cell: reset before the cell and read
after it. On Linux the kernel keeps the high-water mark (``VmHWM`` in /proc/self/status) and
resets it on request (writing 5 to /proc/self/clear_refs); elsewhere the process's lifetime
peak (``getrusage``) is read, which covers the cell and whatever ran before it in the
process."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

_STATUS, _CLEAR = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def reset_peak() -> None:
    """Start a new peak at the current resident size, where the system allows it."""
    try:
        _CLEAR.write_text("5")
    except OSError:
        pass  # not Linux, or not allowed: the lifetime peak is read instead


def peak_mb() -> float:
    """The process's peak resident memory since ``reset_peak`` (MiB)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux, bytes on macOS
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024
