"""geobench core: a benchmark harness for the geometry of representation learning."""

from geobench.hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = ["hookimpl", "__version__"]
