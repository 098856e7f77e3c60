"""Ray executor: each cell is a Ray task with declared resources; the driver alone writes
results, so resume works exactly as with ``local``. Needs ``pip install geobench[ray]``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import Field

from geobench.contract.interfaces import Executor, Params
from geobench.run.executors import WorkerDied


class RayParams(Params):
    address: str | None = Field(
        None, description="'auto' or HOST:PORT of a running cluster; None starts a local one")
    num_cpus: float = Field(1.0, ge=0, description="CPUs reserved by each cell's task")
    num_gpus: float = Field(0.0, ge=0, description="GPUs reserved by each cell's task")
    max_retries: int = Field(2, ge=0, description="retries of a failed or lost task")
    local_cpus: int | None = Field(None, ge=1, description="CPUs of a locally started cluster")


class RayExecutor(Executor):
    def __init__(self, params: RayParams) -> None:
        try:
            import ray
        except ImportError:
            raise RuntimeError("the ray executor needs Ray: pip install 'geobench[ray]'") from None
        self.ray, self.params = ray, params
        err = ray.exceptions  # the errors that mean the task's worker went away
        self.crashes = (err.WorkerCrashedError, err.NodeDiedError, err.LocalRayletDiedError,
                        err.OutOfMemoryError, err.ObjectLostError)

    def _connect(self) -> None:
        if self.ray.is_initialized():
            return
        if self.params.address is not None:
            self.ray.init(address=self.params.address, log_to_driver=False)
        else:
            self.ray.init(num_cpus=self.params.local_cpus, include_dashboard=False,
                          log_to_driver=False)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """Results in completion order; a task that still fails after ``max_retries`` yields
        its exception as the result (``WorkerDied`` naming Ray's error when the worker crashed or
        its node died). Stopping early (Ctrl-C) cancels the outstanding tasks."""
        self._connect()
        remote = self.ray.remote(num_cpus=self.params.num_cpus, num_gpus=self.params.num_gpus,
                                 max_retries=self.params.max_retries,
                                 retry_exceptions=True)(_call)
        pending = {remote.remote(fn, item): item for item in items}
        try:
            while pending:
                done, _ = self.ray.wait(list(pending), num_returns=1)
                for ref in done:
                    item = pending.pop(ref)
                    try:
                        yield item, self.ray.get(ref)
                    except self.crashes as exc:
                        yield item, WorkerDied(f"worker died: {type(exc).__name__}")
                    except Exception as exc:  # the task's error after retries
                        yield item, exc
        finally:
            for ref in pending:
                self.ray.cancel(ref, force=True)


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    """``fn(item)`` as a plain function: Ray makes remote functions of functions only, and
    ``fn`` may be any picklable callable."""
    return fn(item)


def build_ray(params: RayParams, ctx: Any) -> RayExecutor:
    return RayExecutor(params)
