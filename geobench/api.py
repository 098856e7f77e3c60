"""The types a plugin implements and receives, at their stable import path (defined in
``geobench.contract.interfaces`` and ``.mirror_map``), and the seeded batch order a plugin
that trains or probes outside a cell draws from (``batches``, defined in
``geobench.train.loader``)."""

from geobench.contract.interfaces import *  # noqa: F403
from geobench.contract.interfaces import __all__ as _contract
from geobench.contract.mirror_map import MirrorMap
from geobench.train.loader import batches

__all__ = [*_contract, "MirrorMap", "batches"]
