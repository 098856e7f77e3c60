"""Named phases of a training step, visible to ``torch.profiler``.

The engine wraps each part of a step in ``phase(name)``: ``data`` (drawing and indexing the
batch), ``augment`` (the views), ``forward`` (the objective's forward pass and loss),
``backward``, ``optimizer`` (gradient clipping, the update and the objective's after-step
hook), ``observe`` (metrics that watch every step), ``metrics`` (metrics due at this step)
and ``check`` (reading the losses back for the divergence guard, the only regular wait for
the device). While a profiler records, each phase is a ``record_function`` range
``geobench/<name>`` (``benchmarks/profile_step.py`` splits a step's time by them); otherwise
it costs one attribute read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

from torch.autograd import profiler

PHASES = ("data", "augment", "forward", "backward", "optimizer", "observe", "metrics", "check")
PREFIX = "geobench/"
T = TypeVar("T")


def phase(name: str) -> AbstractContextManager:
    """A profiler range ``geobench/<name>`` while a profiler records, else a no-op."""
    if profiler._is_profiler_enabled:
        return profiler.record_function(PREFIX + name)
    return nullcontext()


def in_phase(name: str, items: Iterator[T]) -> Iterator[T]:
    """``items``, each drawn inside ``phase(name)``."""
    while True:
        with phase(name):
            item = next(items, None)
        if item is None:
            return
        yield item
