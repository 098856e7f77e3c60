"""Shared split logic: seeded generators, class subsets, subsampling and the reference set.

Every dataset follows the same rules:

- ``classes: C'`` picks C' of the dataset's classes with a generator seeded from
  ``ctx.seed`` and keeps them in increasing id order; ``classes: [i, j, ...]`` keeps those
  ids in the order given.  Kept class ``picked[k]`` is relabelled ``k``.
- ``n_train`` / ``n_test`` keep a seeded random subset (in the original order) of the split
  after the class filter; asking for more samples than exist is an error.
- The reference set is a seeded random subset of the final test split (of the training split
  when the dataset has no test split) of size ``min(reference_size, len(split))``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from geobench.api import Data, DataParams


def seeded(seed: int, purpose: str) -> torch.Generator:
    """A CPU generator seeded from ``(seed, purpose)``: independent streams per purpose."""
    digest = hashlib.sha256(f"{seed}:{purpose}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)


def pick_classes(classes: int | list[int] | None, num_classes: int, seed: int) -> list[int]:
    """Original ids of the kept classes; position k in the list becomes label k."""
    if classes is None:
        return list(range(num_classes))
    if isinstance(classes, int):
        if not 1 <= classes <= num_classes:
            raise ValueError(f"classes: {classes} is not between 1 and {num_classes}")
        perm = torch.randperm(num_classes, generator=seeded(seed, "classes"))
        return sorted(perm[:classes].tolist())
    bad = [c for c in classes if not 0 <= c < num_classes]
    if bad or not classes:
        raise ValueError(f"classes: ids {bad or classes} not in 0..{num_classes - 1}")
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes: {classes} has repeated ids")
    return list(classes)


def relabel(y: Tensor, picked: Sequence[int], num_classes: int) -> Tensor:
    """Map original ids to 0..len(picked)-1 (ids outside ``picked`` become -1)."""
    table = torch.full((num_classes,), -1, dtype=torch.int64)
    table[torch.as_tensor(list(picked), dtype=torch.int64)] = torch.arange(len(picked))
    return table[y.long()]


def subsample(available: int, n: int | None, generator: torch.Generator, what: str) -> Tensor:
    """Indices of a random subset of size ``n`` (all when None), in increasing order."""
    if n is None:
        return torch.arange(available)
    if n > available:
        raise ValueError(f"{what}: asked for {n} samples but only {available} are available")
    return torch.randperm(available, generator=generator)[:n].sort().values


def reference_index(size: int, reference_size: int, seed: int) -> Tensor:
    """Indices (into a split of ``size`` samples) of the fixed reference set."""
    return subsample(size, min(reference_size, size), seeded(seed, "reference"), "reference")


def assemble(
    train_x: Tensor,
    train_y: Tensor,
    test_x: Tensor,
    test_y: Tensor,
    num_classes: int,
    params: DataParams,
    seed: int,
    extras: dict[str, Any] | None = None,
) -> Data:
    """Pack already-relabelled splits into ``Data``, choosing the reference set."""
    source_x, source_y = (test_x, test_y) if len(test_y) else (train_x, train_y)
    ref = reference_index(len(source_y), params.reference_size, seed)
    return Data(
        train_x=train_x, train_y=train_y.long(), test_x=test_x, test_y=test_y.long(),
        reference_x=source_x[ref], reference_y=source_y[ref].long(),
        num_classes=num_classes, batch_size=params.batch_size, extras=dict(extras or {}),
    )


def from_splits(
    train_x: Tensor,
    train_y: Tensor,
    test_x: Tensor,
    test_y: Tensor,
    num_classes: int,
    params: DataParams,
    seed: int,
) -> Data:
    """Apply the class subset, ``n_train`` / ``n_test`` and the reference rule to real splits."""
    picked = pick_classes(params.classes, num_classes, seed)
    splits = []
    for name, x, y, n in (("n_train", train_x, train_y, params.n_train),
                          ("n_test", test_x, test_y, params.n_test)):
        keep = torch.nonzero(relabel(y, picked, num_classes) >= 0).flatten()
        keep = keep[subsample(len(keep), n, seeded(seed, name), name)]
        splits += [x[keep], relabel(y[keep], picked, num_classes)]
    return assemble(*splits, num_classes=len(picked), params=params, seed=seed)
