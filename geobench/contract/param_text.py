"""A params model's fields as a suite writes them: ``hidden: int ≥ 1 = 64``, ``lam: float >
0`` (required), ``pool: max | avg = max``, ``mirror_map: mirror_maps spec | None = None``;
a field holding a params model of its own lists that model's fields as ``field.sub``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from geobench.contract.param_models import MAX_COUNT, Nested, nested_shape

BOUNDS = {at.Ge: "ge", at.Gt: "gt", at.Le: "le", at.Lt: "lt", at.MinLen: "min_length",
          at.MaxLen: "max_length", at.MultipleOf: "multiple_of"}
"""The pydantic constraints shown, by the ``annotated_types`` class that carries each."""


@dataclass(frozen=True)
class ParamRow:
    """One field: its dotted name, its type (``int | None``), its constraints (pydantic's
    names: ``{"ge": 1}``), its default (``repr``, or ``required``) and its description."""

    name: str
    type: str
    default: str
    doc: str
    constraints: dict[str, Any] = field(default_factory=dict)
    shown: str = ""

    def signature(self) -> str:
        """``name: type constraints = default`` as a suite writes the value (the cap
        ``MAX_COUNT`` of counts left out)."""
        default = "" if self.default == "required" else f" = {self.shown}"
        bounds = {k: v for k, v in self.constraints.items() if (k, v) != ("le", MAX_COUNT)}
        return f"{self.name}: {constrained(self.type, bounds)}{default}"

    def record(self) -> dict[str, Any]:
        """The row as JSON: name, type, default, doc and constraints."""
        return {"name": self.name, "type": self.type, "default": self.default,
                "doc": self.doc, "constraints": self.constraints}


def param_rows(model: type[BaseModel], prefix: str = "") -> list[ParamRow]:
    """Every field of ``model`` in declaration order; a field whose type is a params model
    is followed by that model's fields (``predictor.depth``)."""
    rows = []
    for name, info in model.model_fields.items():
        required = info.is_required()
        value = None if required else info.get_default(call_default_factory=True)
        rows.append(ParamRow(prefix + name, field_type(info), "required" if required
                             else repr(value), info.description or "", constraints(info),
                             "" if required else written(value)))
        inner = _model_in(info.annotation)
        if inner is not None:
            rows += param_rows(inner, f"{prefix}{name}.")
    return rows


def field_type(info: FieldInfo) -> str:
    """The type of a field as a suite writes its value; a ``Nested`` field is a spec of its
    kind (``mirror_maps spec``), a params model a ``mapping``."""
    kind = next((m.kind for m in info.metadata if isinstance(m, Nested)), None)
    if kind is None:
        return type_text(info.annotation)
    spec = f"{kind} spec"
    text = {"map": f"dict[str, {spec}]", "list": f"list[{spec}]"}.get(
        nested_shape(info.annotation), spec)
    return f"{text} | None" if _optional(info.annotation) else text


def _members(annotation: Any) -> list[Any]:
    if get_origin(annotation) in (Union, UnionType):
        return list(get_args(annotation))
    return [annotation]


def _optional(annotation: Any) -> bool:
    return NoneType in _members(annotation)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    return next((a for a in _members(annotation)
                 if isinstance(a, type) and issubclass(a, BaseModel)), None)


def type_text(annotation: Any) -> str:
    """``int | None``, ``max | avg`` (a ``Literal``), ``list[int]``, ``mapping`` (a params
    model): never a module path."""
    if annotation is NoneType or annotation is None:
        return "None"
    if annotation is Any:
        return "Any"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        return " | ".join(type_text(a) for a in args)
    if origin is Literal:
        return " | ".join(written(a) for a in args)
    if origin is Annotated:
        inner = type_text(args[0])
        bounds = {name: getattr(m, name) for m in args[1:] for cls, name in BOUNDS.items()
                  if isinstance(m, cls)}
        return constrained(inner, bounds)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else type_text(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]" if args else \
            getattr(origin, "__name__", str(origin))
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def constraints(info: FieldInfo) -> dict[str, Any]:
    """The field's pydantic constraints by pydantic's names (``ge``, ``lt``,
    ``min_length``, ...)."""
    return {name: getattr(m, name) for m in info.metadata for cls, name in BOUNDS.items()
            if isinstance(m, cls)}


def constrained(type_: str, bounds: dict[str, Any]) -> str:
    """``type_`` with ``bounds`` written after the part that is not None: ``int ≥ 1 |
    None``, ``float in (0, 1]``, ``list[float] of length ≥ 1``."""
    if not bounds:
        return type_
    base, none = (type_[:-len(" | None")], " | None") if type_.endswith(" | None") \
        else (type_, "")
    parts = [_range(bounds.get("ge"), bounds.get("gt"), bounds.get("le"), bounds.get("lt"))]
    length = _range(bounds.get("min_length"), None, bounds.get("max_length"), None)
    parts.append(f"of length {length}" if length else "")
    if "multiple_of" in bounds:
        parts.append(f"a multiple of {_number(bounds['multiple_of'])}")
    return " ".join([base, *filter(None, parts)]) + none


def _range(ge: Any, gt: Any, le: Any, lt: Any) -> str:
    low = (f"[{_number(ge)}" if ge is not None else f"({_number(gt)}") \
        if ge is not None or gt is not None else None
    high = (f"{_number(le)}]" if le is not None else f"{_number(lt)})") \
        if le is not None or lt is not None else None
    if low and high:
        return f"in {low}, {high}"
    if low:
        return f"≥ {_number(ge)}" if ge is not None else f"> {_number(gt)}"
    if high:
        return f"≤ {_number(le)}" if le is not None else f"< {_number(lt)}"
    return ""


def _number(value: Any) -> str:
    """``1e9`` for a large round number, else as Python writes it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**6:
        return re.sub(r"e\+?0*", "e", f"{value:g}")
    return str(value)


def written(value: Any) -> str:
    """A default as a suite writes it: a plain word bare, a tuple as a list."""
    if isinstance(value, str):
        return value if re.fullmatch(r"[\w.+\-/]+", value) else repr(value)
    if isinstance(value, tuple | list):
        return f"[{', '.join(written(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{written(k)}: {written(v)}" for k, v in value.items()) + "}"
    return repr(value)
