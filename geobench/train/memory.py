"""The peak resident memory of the process that runs a cell, reset before the cell and read
after it: the kernel's high-water mark (``VmHWM`` in /proc/self/status), which writing 5
to /proc/self/clear_refs resets (Linux). Where that is not possible, no peak is recorded (a
process's lifetime peak would count what ran before the cell). And the memory the machine
has available for more workers."""

from __future__ import annotations

from pathlib import Path

_STATUS, _CLEAR = Path("/proc/self/status"), Path("/proc/self/clear_refs")
_MEMINFO = Path("/proc/meminfo")


def reset_peak() -> bool:
    """Start a new peak at the current resident size; False where the system does not
    allow it."""
    try:
        _CLEAR.write_text("5")
    except OSError:
        return False
    return True


def peak_mb() -> float | None:
    """The process's peak resident memory since ``reset_peak`` (MiB); None where the
    system does not say."""
    return _mib(_STATUS, "VmHWM:")


def available_mb() -> float | None:
    """Memory the machine can give new processes without swapping (``MemAvailable``, MiB);
    None where the system does not say."""
    return _mib(_MEMINFO, "MemAvailable:")


def _mib(path: Path, field: str) -> float | None:
    """The kB figure of ``field`` in the /proc file ``path``, in MiB (None: not there)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    found = [line.split()[1] for line in lines if line.startswith(field)]
    return int(found[0]) / 1024 if found else None
