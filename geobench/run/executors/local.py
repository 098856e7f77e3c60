"""Serial executor: runs every cell in this process, in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from geobench.contract.interfaces import Executor, Params


class LocalParams(Params):
    """The local executor has no parameters."""


class LocalExecutor(Executor):
    in_process = True

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        for item in items:
            yield item, fn(item)


def build_local(params: LocalParams, ctx: Any) -> LocalExecutor:
    return LocalExecutor()
