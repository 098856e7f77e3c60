"""Seeded batches (geobench.train.loader): each epoch one permutation, full batches only."""

import hashlib

import numpy as np
import torch

from geobench.contract.interfaces import Data
from geobench.train.loader import batch_hash, batches, steps_per_epoch


def _data(n: int, batch_size: int) -> Data:
    x = torch.arange(n, dtype=torch.float32).unsqueeze(1) * 10  # row i holds 10 i
    y = torch.arange(n) % 3
    return Data(x, y, x[:1], y[:1], x[:1], y[:1], 3, batch_size)


def test_epochs_are_permutations_with_the_last_incomplete_batch_dropped():
    data = _data(10, 3)  # 3 full batches per epoch, one sample left out each epoch
    got = list(batches(data, seed=5, steps=7))
    assert [b.step for b in got] == list(range(7)) and steps_per_epoch(data) == 3
    for epoch in (got[0:3], got[3:6]):
        seen = torch.cat([b.index for b in epoch]).tolist()
        assert len(seen) == len(set(seen)) == 9 and set(seen) <= set(range(10))
    first = torch.randperm(10, generator=torch.Generator().manual_seed(5))
    assert torch.equal(torch.cat([b.index for b in got[:3]]), first[:9])
    for b in got:
        assert b.x.shape == (3, 1) and torch.equal(b.x[:, 0], 10.0 * b.index)
        assert torch.equal(b.y, b.index % 3)


def test_the_same_seed_gives_the_same_batches():
    data = _data(12, 4)
    a = [b.index.tolist() for b in batches(data, 1, 9)]
    assert a == [b.index.tolist() for b in batches(data, 1, 9)]
    assert a != [b.index.tolist() for b in batches(data, 2, 9)]
    assert [b.index.tolist() for b in batches(data, 1, 4)] == a[:4]


def test_a_batch_larger_than_the_data_is_the_whole_data():
    data = _data(5, 64)
    got = list(batches(data, 0, 3))
    assert steps_per_epoch(data) == 1 and all(sorted(b.index.tolist()) == list(range(5))
                                              for b in got)
    assert list(batches(data, 0, 0)) == []


def test_batch_hash_is_sha256_of_the_indices():
    batch = next(batches(_data(8, 4), 3, 1))
    raw = np.asarray(batch.index.tolist(), dtype=np.int64).tobytes()
    assert batch_hash(batch) == hashlib.sha256(raw).hexdigest()[:12]
