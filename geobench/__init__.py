"""geobench core: a benchmark harness for the geometry of representation learning."""

from geobench.contract.hookspecs import hookimpl
from geobench.report.results import load_results, load_series

__version__ = "0.1.0"

__all__ = ["hookimpl", "load_results", "load_series", "__version__"]
