"""Reading a suite file: its structure validated against the schema, and the places
errors point at (``file:line: dotted.path: what is wrong``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from geobench.contract.errors import describe_validation_error, error_loc
from geobench.suite.problems import combined
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
        return SuiteError(f"{self.where(loc)}: {message}", line_of(self.lines, loc))


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
        raise validation_errors(exc, data, loaded.fail, Suite) from None
    return loaded


def validation_errors(exc: ValidationError, data: Any, fail: Callable[[Loc, str], SuiteError],
                      model: type[BaseModel] | None = None) -> SuiteError:
    """``exc``'s problems as one error (``combined``): ``fail(place, message)`` for each
    place in ``data`` that ``exc`` finds wrong, with the first message about it; a place
    inside or around one already reported adds nothing (a union's other members)."""
    errors: list[SuiteError] = []
    places: list[Loc] = []
    for err in exc.errors():
        at = error_loc(err, data)
        if not any(at[:len(p)] == p or p[:len(at)] == at for p in places):
            places.append(at)
            errors.append(fail(at, describe_validation_error(err, model)))
    return combined(errors)
