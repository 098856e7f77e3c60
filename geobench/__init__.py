"""geobench core: a benchmark harness for the geometry of representation learning.

Importing the package loads the hook marker only; ``load_results`` and ``load_series`` (the
results API, ``geobench.report.results``) load on first use."""

from typing import Any

from geobench.contract.hooks import hookimpl
from geobench.version import __version__

__all__ = ["hookimpl", "load_results", "load_series", "__version__"]
LAZY = {"load_results", "load_series"}


def __getattr__(name: str) -> Any:
    if name in LAZY:
        from geobench.report import results

        return getattr(results, name)
    raise AttributeError(f"module 'geobench' has no attribute {name!r}")
