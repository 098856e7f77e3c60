"""An arm's parameter layout: the fact ``layout`` (and ``layouts``, one per arm of the
cell) that the core builds on the meta device when a need asks
(``geobench.contract.meta_build``), and needs on it. Torch-free: a component's needs import
it at registration."""

from __future__ import annotations

from dataclasses import dataclass

from geobench.contract.needs import Need

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """``(name, shape, trainable)`` of every parameter of the arm (``backbone.*``, ``head.*``,
    ``objective.*``, as ``Arm.named_parameters`` names them), or ``error``: why the arm
    cannot be built for the data (one line)."""

    parameters: tuple[tuple[str, Shape, bool], ...] = ()
    error: str | None = None

    def names(self) -> list[str]:
        """Names of the trainable parameters (what an optimizer updates), in order."""
        return [name for name, _, grad in self.parameters if grad]

    def shapes(self, prefixes: tuple[str, ...] = ("",), trainable_only: bool = False
               ) -> list[tuple[str, Shape]]:
        """(name, shape) of the parameters whose names start with one of ``prefixes``."""
        return [(n, s) for n, s, grad in self.parameters
                if n.startswith(prefixes) and (grad or not trainable_only)]


BUILDS = Need(("layout",), lambda layout: layout.error is None,
              "data it can take (built on the meta device)",
              says=lambda layout: layout.error)
"""The arm can be built for the data's inputs (a component whose build depends on them)."""


def same_layouts(prefixes: tuple[str, ...], trainable_only: bool, wants: str) -> Need:
    """A need that every arm of the cell has the first arm's parameter names and shapes
    (those whose names start with one of ``prefixes``); a failed build lets it hold (the
    backbone's own need reports it)."""

    def mismatch(layouts: dict[str, Layout]) -> str | None:
        first, *others = layouts.items()
        ref = first[1].shapes(prefixes, trainable_only)
        for arm, layout in others:
            if first[1].error or layout.error:
                continue
            mine = layout.shapes(prefixes, trainable_only)
            if mine != ref:
                diff = next(((a, b) for a, b in zip(ref, mine) if a != b),
                            (ref[len(mine)] if len(ref) > len(mine) else None,
                             mine[len(ref)] if len(mine) > len(ref) else None))
                counts = f" ({len(mine)} vs {len(ref)} parameters)" if len(mine) != len(ref) \
                    else ""
                return (f"arm {arm!r} has {_param(diff[1])} where arm {first[0]!r} has "
                        f"{_param(diff[0])}{counts}")
        return None

    return Need(("layouts",), lambda layouts: mismatch(layouts) is None, wants,
                says=mismatch)


def _param(item: tuple[str, Shape] | None) -> str:
    return "nothing" if item is None else f"{item[0]} {tuple(item[1])}"
