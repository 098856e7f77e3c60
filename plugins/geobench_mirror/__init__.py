"""Mirror flow in homogeneous networks: mirror maps, mirror descent, margins and sparsity.

Public API::

    from geobench_mirror import MirrorDescent, maps
    opt = MirrorDescent(model.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.1))

The names load on first use, so registering the plugin does not import torch.
"""

from importlib import import_module
from typing import Any

_LAZY = {"maps": ("geobench_mirror.maps", None),
         "MirrorMap": ("geobench_mirror.maps", "MirrorMap"),
         "MirrorDescent": ("geobench_mirror.mirror_descent", "MirrorDescent")}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'geobench_mirror' has no attribute {name!r}")
    module, attr = _LAZY[name]
    loaded = import_module(module)
    return loaded if attr is None else getattr(loaded, attr)


__all__ = ["MirrorDescent", "MirrorMap", "maps"]
