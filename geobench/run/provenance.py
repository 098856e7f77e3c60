"""What produced a result: code revision, the versions and the CPU that change numbers."""

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


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model (from /proc/cpuinfo where there is one) and the SIMD level torch's
    kernels dispatch to, e.g. ``Intel(R) Xeon(R) Processor (AVX512)``: two CPUs that differ
    in either can round a run's values otherwise."""
    try:
        with open(cpuinfo) as lines:
            model = next((line.split(":", 1)[1].strip() for line in lines
                          if line.startswith("model name")), "")
    except OSError:
        model = ""
    model = model or platform.processor() or platform.machine()
    return f"{model} ({torch.backends.cpu.get_cpu_capability()})"


@cache
def provenance() -> dict[str, Any]:
    """git sha and dirty flag of the geobench checkout (None outside git), versions, host
    and CPU."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "git_sha": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "geobench": __version__,
        "host": platform.node(),
        "cpu": cpu_model(),
    }
