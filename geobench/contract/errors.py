"""User-facing errors: one-line descriptions of pydantic validation errors, lookup errors,
and did-you-mean suggestions."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import BaseModel


class RegistryError(ValueError):
    """A lookup or registration problem, phrased for the user."""


def did_you_mean(word: str, choices: list[str]) -> str:
    """`` (did you mean 'x'?)`` when a close match exists, else ``''``."""
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed_fields(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    for part in loc[:-1]:
        if model is None:
            return []
        info = model.model_fields.get(str(part))
        sub = getattr(info, "annotation", None) if info else None
        model = sub if isinstance(sub, type) and issubclass(sub, BaseModel) else None
    return list(model.model_fields) if model is not None else []


def describe_validation_error(err: dict[str, Any], model: type[BaseModel] | None = None) -> str:
    """A short sentence for one entry of ``ValidationError.errors()``."""
    kind, value = err.get("type", ""), err.get("input")
    field = str(err["loc"][-1]) if err.get("loc") else "value"
    if kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", err.get("ctx", {}).get("expected", ""))
        return (f"{value!r} is not an allowed {field}{did_you_mean(str(value), allowed)}; "
                f"allowed: {', '.join(allowed)}")
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, tuple(err["loc"]))
        hint = did_you_mean(field, allowed)
        return f"unknown field {field!r}{hint}" + (f"; allowed: {', '.join(allowed)}"
                                                   if allowed else "")
    if kind == "missing":
        return f"missing required field {field!r}"
    msg = err.get("msg", "invalid value").removeprefix("Value error, ")
    return f"{msg} (got {_short(value)})" if value is not None and not isinstance(value, dict) \
        else msg


def _short(value: Any, width: int = 60) -> str:
    """``repr(value)``, cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def error_loc(err: dict[str, Any], data: Any) -> tuple[Any, ...]:
    """Where ``err`` (one entry of ``ValidationError.errors()``) lies in the validated
    ``data``: the path is cut where ``data`` has no such key, which drops pydantic's union
    member tags (``seeds.int``) and ``[key]``; a missing field keeps its name."""
    if err.get("type") == "missing":
        return tuple(err["loc"])
    out: list[Any] = []
    for part in err["loc"]:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            break
        out.append(part)
    return tuple(out)
