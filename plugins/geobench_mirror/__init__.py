"""Mirror flow in homogeneous networks: mirror maps, mirror descent, margins and sparsity.

Public API::

    from geobench_mirror import MirrorDescent, maps
    opt = MirrorDescent(model.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.1))
"""

from geobench_mirror import maps
from geobench_mirror.lars import LARS
from geobench_mirror.maps import MirrorMap
from geobench_mirror.mirror_descent import MirrorDescent

__all__ = ["LARS", "MirrorDescent", "MirrorMap", "maps"]
