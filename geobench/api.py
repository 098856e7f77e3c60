"""The types a plugin implements and receives, at their stable import path (defined in
``geobench.contract.api``)."""

from geobench.contract.api import *  # noqa: F403
from geobench.contract.api import __all__  # noqa: F401
