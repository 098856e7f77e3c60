"""The loaded plugins' registry, at its stable import path (defined in
``geobench.contract.manager`` and ``.registry``): the registry, its one-line error, the
did-you-mean hint its messages use, and a suite's cells as the registry resolves them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from geobench.contract.manager import GROUP, load_registry, plugins, registry
from geobench.contract.registry import Registry, RegistryError, did_you_mean

if TYPE_CHECKING:
    from geobench.records import Cell

__all__ = ["GROUP", "Registry", "RegistryError", "did_you_mean", "load_registry", "plugins",
           "registry", "suite_cells"]


def suite_cells(path: str | Path, profile: str = "smoke") -> list[Cell]:
    """The cells of the suite file at ``path`` under ``profile``, validated (claims included)
    and resolved through the loaded plugins' registry, as ``geobench validate`` checks them."""
    from geobench.study import Study

    return Study.open(path, profile).cells
