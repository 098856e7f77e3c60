"""Process-pool executor: N worker processes run cells; only the parent writes results."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from pydantic import Field

from geobench.api import Params


class PoolParams(Params):
    workers: int = Field(2, ge=1, description="worker processes")
    threads_per_worker: int | None = Field(
        None, ge=1, description="torch threads per worker (default: cores / workers)")


def _init_worker(threads: int) -> None:
    torch.set_num_threads(threads)


def _call(job: tuple[Callable[[Any], Any], Any]) -> tuple[Any, Any]:
    fn, item = job
    return item, fn(item)


class PoolExecutor:
    in_process = False

    def __init__(self, params: PoolParams) -> None:
        self.workers = params.workers
        self.threads = params.threads_per_worker or max(1, (os.cpu_count() or 1) // self.workers)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """Results in completion order. ``fn`` and the items must be picklable."""
        ctx = mp.get_context("spawn")
        pool = ctx.Pool(self.workers, initializer=_init_worker, initargs=(self.threads,))
        try:
            yield from pool.imap_unordered(_call, [(fn, item) for item in items])
            pool.close()
        finally:
            pool.terminate()
            pool.join()


def build_pool(params: PoolParams, ctx: Any) -> PoolExecutor:
    return PoolExecutor(params)
