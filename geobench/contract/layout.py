"""An arm's parameter layout: the fact ``layout`` (and ``layouts``, one per arm of the
cell) that the core builds on the meta device when a need asks
(``geobench.contract.meta_build``), and needs on it. Torch-free: a component's needs import
it at registration."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from geobench.contract.needs import Need

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """``(name, shape, trainable)`` of every parameter of the arm (``backbone.*``, ``head.*``,
    ``objective.*``, as ``Arm.named_parameters`` names them, after the arm's init), or
    ``error``: why its network (backbone and head) cannot be built for the data (one
    line), and ``failed``: whose build or forward pass raised it, ``"backbone"`` or
    ``"head"``."""

    parameters: tuple[tuple[str, Shape, bool], ...] = ()
    error: str | None = None
    failed: str | None = None

    def names(self) -> list[str]:
        """Names of the trainable parameters (what an optimizer updates), in order."""
        return [name for name, _, grad in self.parameters if grad]

    def shapes(self) -> list[tuple[str, Shape]]:
        """(name, shape) of the trainable parameters, in order."""
        return [(n, s) for n, s, grad in self.parameters if grad]

    def size(self, prefix: str) -> int:
        """Entries of the parameters whose names start with ``prefix``."""
        return sum(math.prod(s) for n, s, _ in self.parameters if n.startswith(prefix))


BUILDS = Need(("layout",), lambda layout: layout.error is None,
              "data it can take (built on the meta device)",
              says=lambda layout: layout.error)
"""The arm can be built for the data's inputs (a component whose build depends on them)."""

HEAD_RUNS = Need(("layout",), lambda layout: layout.failed != "head",
                 "to build and run on the backbone's features (run on the meta device)",
                 says=lambda layout: layout.error)
"""The head builds for the backbone and its forward pass runs on the backbone's features:
the core's need of every head, where the data declares its ``input_shape``."""


def _every_arm(wants: str, differ: Callable[[str, Layout, str, Layout], str | None]) -> Need:
    """A need on ``layouts``: ``differ(first, its layout, arm, its layout)`` finds nothing for
    any other arm; an arm whose network cannot be built lets it hold (``BUILDS`` reports
    that)."""

    def mismatch(layouts: dict[str, Layout]) -> str | None:
        (first, ref), *others = layouts.items()
        found = (differ(first, ref, arm, layout) for arm, layout in others
                 if not (ref.error or layout.error))
        return next((f for f in found if f is not None), None)

    return Need(("layouts",), lambda layouts: mismatch(layouts) is None, wants,
                says=mismatch)


def same_layouts(wants: str) -> Need:
    """Every arm of the cell has the first arm's trainable parameter names and shapes."""

    def differ(first: str, ref: Layout, arm: str, layout: Layout) -> str | None:
        theirs, mine = ref.shapes(), layout.shapes()
        if mine == theirs:
            return None
        a, b = next(((a, b) for a, b in zip(theirs, mine) if a != b),
                    (theirs[len(mine)] if len(theirs) > len(mine) else None,
                     mine[len(theirs)] if len(mine) > len(theirs) else None))
        return f"arm {arm!r} has {_param(b)} where arm {first!r} has {_param(a)}"

    return _every_arm(wants, differ)


def same_sizes(prefixes: tuple[str, ...], wants: str) -> Need:
    """Every arm of the cell has as many parameter entries under each of ``prefixes`` as
    the first arm (a metric of flattened parameter vectors needs no more)."""

    def differ(first: str, ref: Layout, arm: str, layout: Layout) -> str | None:
        return next((f"arm {arm!r} has {layout.size(p)} {p}* entries where arm {first!r} "
                     f"has {ref.size(p)}" for p in prefixes if layout.size(p) != ref.size(p)),
                    None)

    return _every_arm(wants, differ)


def _param(item: tuple[str, Shape] | None) -> str:
    return "nothing" if item is None else f"{item[0]} {tuple(item[1])}"
