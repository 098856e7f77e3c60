"""Where an exception was raised, in one line: what was raised, the plugin whose code raised
it and the file:line of its innermost frame.

The plugin is that of the innermost frame in a registered component's module or package
(its factory's), the longest such name winning; where no frame is one, the ``fallback``
origin (the component that was running), where known. The file is shown by its module's
path (``geobench_toy.py``, ``torch/nn/functional.py``), never the machine's folders.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from types import FrameType

from geobench.contract.manager import describe_failure
from geobench.contract.registry import Registry


def failure_line(exc: BaseException, registry: Registry | None = None,
                 fallback: str | None = None) -> str:
    """``RuntimeError: boom [plugin toy (geobench-toy), geobench_toy.py:57]``: the exception
    in one line, with where it was raised (``raised_at``) where its traceback says."""
    where = raised_at(exc, registry, fallback)
    return f"{describe_failure(exc)} [{where}]" if where else describe_failure(exc)


def raised_at(exc: BaseException, registry: Registry | None = None,
              fallback: str | None = None) -> str:
    """``plugin <origin>, <file>:<line>`` for ``exc`` (either part left out when unknown;
    empty without a traceback)."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    if not frames:
        return ""
    lines = [line for _, line in traceback.walk_tb(exc.__traceback__)]
    inner = frames[-1]
    owners = _owners(registry) if registry is not None else {}
    origin = next((o for frame in reversed(frames)
                   if (o := _owner(owners, _module(frame))) is not None), fallback)
    place = f"{_short_path(inner.f_code.co_filename, _module(inner))}:{lines[-1]}"
    return f"plugin {origin}, {place}" if origin else place


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__") or "")


def _owners(registry: Registry) -> dict[str, str | None]:
    """Module or package name -> the origin of the plugin whose components live there: each
    factory's module, and its package (None where two plugins share it)."""
    modules: dict[str, str] = {}
    packages: dict[str, str | None] = {}
    for entries in registry.entries.values():
        for entry in entries.values():
            module = getattr(entry.factory, "__module__", None)
            if not isinstance(module, str):
                continue
            modules.setdefault(module, entry.origin)
            package = _package(module)
            if packages.setdefault(package, entry.origin) != entry.origin:
                packages[package] = None
    return {**packages, **modules}


def _package(module: str) -> str:
    """The package a module belongs to (a package is its own; a top-level module too)."""
    if hasattr(sys.modules.get(module), "__path__"):
        return module
    return module.rpartition(".")[0] or module


def _owner(owners: dict[str, str | None], module: str) -> str | None:
    """The origin owning ``module``: the longest owned name that is it or contains it."""
    if not module:
        return None
    best = max((name for name in owners if module == name or module.startswith(name + ".")),
               key=len, default=None)
    return None if best is None else owners[best]


def _short_path(filename: str, module: str) -> str:
    """``filename`` from its module's top package down (``tests/core/toy_plugin.py``), or
    its name alone where the module does not match the file."""
    path = Path(filename)
    parts = module.split(".") if module and module != "__main__" else []
    if path.name == "__init__.py":
        parts.append("__init__")
    if not parts or path.stem != parts[-1] or len(path.parts) < len(parts):
        return path.name
    return "/".join(path.parts[-len(parts):])
