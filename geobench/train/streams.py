"""Named random streams of a trial seed.

Every random draw of a cell comes from ``(trial seed, stream name)``: the seed of a stream
is the first 63 bits of ``sha256("<trial seed>/<name>")``, so streams are independent of
each other, of the cell's id and of whatever else ran in the process.  The streams the
engine uses:

- ``init/<component>``  global RNG while ``backbone``, ``head``, ``objective``, ``init`` and
  ``optimizer`` are built (the same for every arm and every cell of a trial seed);
- ``data``              the dataset's own draws (class subset, splits, synthetic samples);
- ``data/order``        the order of training samples (one permutation per epoch);
- ``augment/<step>``    the views of step ``step`` (view 0, 1, ... drawn in turn);
- ``train``             the global RNG during training steps (dropout and the like);
- ``metric/<id>``       a metric instance's fixed draws (``MetricContext.seed``), and
  ``metric/<id>/<step>`` its draws at one evaluation (``MetricContext.generator`` and the
  global RNG while it runs).

An arm with ``replicate: k > 0`` draws its ``init/*``, ``data/order``, ``augment/<step>`` and
``train`` from ``<name>/replicate<k>`` instead: an independent run on the same data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import torch

DATA = "data"
ORDER = "data/order"
TRAIN = "train"


def stream_seed(trial_seed: int, name: str) -> int:
    """The 63-bit seed of stream ``name`` of ``trial_seed``."""
    digest = hashlib.sha256(f"{trial_seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(trial_seed: int, name: str) -> torch.Generator:
    """A CPU generator on stream ``name`` of ``trial_seed``."""
    return torch.Generator().manual_seed(stream_seed(trial_seed, name))


def replicate_stream(name: str, replicate: int) -> str:
    """Stream ``name`` of an arm's replicate: ``name`` itself for replicate 0, else
    ``<name>/replicate<k>``."""
    return name if replicate == 0 else f"{name}/replicate{replicate}"


def augment_stream(step: int) -> str:
    return f"augment/{step}"


def metric_stream(metric_id: str, step: int | None = None) -> str:
    return f"metric/{metric_id}" if step is None else f"metric/{metric_id}/{step}"


@contextmanager
def global_rng(seed: int) -> Iterator[None]:
    """Run the block with torch's global RNG (CPU and CUDA) seeded by ``seed``; the state
    from before is restored afterwards, so the block neither sees nor disturbs it."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


class SavedRng:
    """A global-RNG stream kept aside: ``active()`` runs a block with torch's global RNG (CPU
    and CUDA) in this stream's state, saves where the block left it for next time, and
    restores the state from before."""

    def __init__(self, seed: int) -> None:
        self.devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() \
            else []
        with global_rng(seed):
            self.state = self._get()

    def _get(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        return torch.get_rng_state(), [torch.cuda.get_rng_state(d) for d in self.devices]

    @contextmanager
    def active(self) -> Iterator[None]:
        with torch.random.fork_rng(devices=self.devices):
            cpu, cuda = self.state
            torch.set_rng_state(cpu)
            for device, state in zip(self.devices, cuda):
                torch.cuda.set_rng_state(state, device)
            yield
            self.state = self._get()
