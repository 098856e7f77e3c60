"""Reading a suite file: its structure validated against the schema, and the places
errors point at (``file:line: dotted.path: what is wrong``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from geobench.contract.errors import describe_validation_error, error_loc
from geobench.suite.schema import Suite
from geobench.suite.yamlio import SuiteError, line_of, load_yaml

Loc = tuple[Any, ...]


@dataclass
class LoadedSuite:
    path: str
    suite: Suite
    lines: dict[Loc, int]

    def where(self, loc: Loc) -> str:
        line = line_of(self.lines, loc)
        dotted = format_loc(loc)
        return f"{self.path}{f':{line}' if line else ''}: {dotted}" if dotted else self.path

    def fail(self, loc: Loc, message: str) -> SuiteError:
        return SuiteError(f"{self.where(loc)}: {message}")


def format_loc(loc: Loc) -> str:
    if loc and loc[0] in ("--set", "--only"):
        return " ".join(str(p) for p in loc)
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_suite(path: str | Path) -> LoadedSuite:
    """Read and validate the suite's own structure (components are checked in ``expand``)."""
    path = str(path)
    if not Path(path).is_file():
        raise SuiteError(f"{path}: no such suite file")
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: a suite is a YAML mapping with at least 'name' and 'base'")
    loaded = LoadedSuite(path, None, lines)  # type: ignore[arg-type]
    try:
        loaded.suite = Suite.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise loaded.fail(error_loc(err, data), describe_validation_error(err, Suite)) from None
    return loaded
