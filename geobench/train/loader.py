"""Deterministic batches: the order of samples comes from a generator seeded by the cell."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import torch

from geobench.contract.interfaces import Batch, Data, host_to_device


def batch_hash(batch: Batch) -> str:
    """A short digest of which samples, in which order, the batch holds."""
    return hashlib.sha256(batch.index.cpu().numpy().tobytes()).hexdigest()[:12]


def batches(data: Data, seed: int, steps: int) -> Iterator[Batch]:
    """``steps`` batches of ``min(batch_size, n_train)`` samples, epoch after epoch.

    Each epoch is a fresh permutation drawn from ``torch.Generator().manual_seed(seed)``;
    the incomplete last batch of an epoch is dropped so every batch has the same size.
    The batch's ``index`` stays on the CPU; its samples are gathered on the data's device.
    """
    n = data.train_x.shape[0]
    size = min(data.batch_size, n)
    gen = torch.Generator().manual_seed(seed)
    step = 0
    while True:
        order = torch.randperm(n, generator=gen)
        for start in range(0, n - size + 1, size):
            if step >= steps:
                return
            index = order[start:start + size]
            on_device = host_to_device(index, data.train_x.device)
            yield Batch(data.train_x[on_device], data.train_y[on_device], index, step)
            step += 1


def steps_per_epoch(data: Data) -> int:
    n = data.train_x.shape[0]
    return n // min(data.batch_size, n)
