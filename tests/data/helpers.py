"""Shared builders for the data tests."""

from __future__ import annotations

from typing import Any

import torch

from geobench.contract.interfaces import BuildContext, Data
from geobench.contract.manager import load_registry

_REGISTRY = None


def registry():
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = load_registry()
    return _REGISTRY


def ctx(seed: int = 0, data: Data | None = None) -> BuildContext:
    return BuildContext(seed=seed, device=torch.device("cpu"), data=data)


def data(spec: dict[str, Any], seed: int = 0) -> Data:
    return registry().build("datasets", spec, ctx(seed))


def augmentation(spec: dict[str, Any], dataset: Data | None = None):
    return registry().build("augmentations", spec, ctx(0, dataset))


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)
