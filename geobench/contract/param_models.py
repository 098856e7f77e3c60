"""The torch-free part of the plugin contract: parameter models, nested component fields
and metric field docs.

Registering a component needs only these, so listing components never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field


class Params(BaseModel):
    """Base of every component's parameter model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class EmptyParams(Params):
    """A component without parameters."""


@dataclass(frozen=True)
class Nested:
    """Marks a params field whose value names components of another kind: one spec
    ``{name: <registered name>, **params}``, or a mapping or list of such specs.

    ``mirror_map: Annotated[dict[str, Any] | None, Nested("mirror_maps")]``: the suite
    validates each spec against the named kind (did-you-mean on an unknown name), fills in
    its defaults, and puts its plugin's version in the cell id; the factory builds it with
    ``ctx.registry.build(kind, spec, ctx)``.
    """

    kind: str


def nested_kinds(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> component kind, for the fields of ``model`` marked ``Nested``."""
    return {name: meta.kind for name, info in model.model_fields.items()
            for meta in info.metadata if isinstance(meta, Nested)}


def nested_specs(model: type[BaseModel], field: str, value: Any
                 ) -> list[tuple[tuple[Any, ...], Any]]:
    """(location inside the field, spec) of every component spec in ``value``, the value of
    the ``Nested`` field ``field`` of ``model``. The field's type says what it holds: a
    mapping of specs (``dict[str, dict[...]]``), a list or tuple of specs, or else one spec."""
    if value is None:
        return []
    shape = nested_shape(model.model_fields[field].annotation)
    if shape == "map":
        return [((key,), spec) for key, spec in value.items()]
    if shape == "list":
        return [((i,), spec) for i, spec in enumerate(value)]
    return [((), value)]


def nested_shape(annotation: Any) -> str:
    """``map``, ``list`` or ``one``: what a ``Nested`` field of this type (``X | None``: X)
    holds."""
    if get_origin(annotation) in (Union, UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    origin = get_origin(annotation)
    if origin in (list, tuple):
        return "list"
    args = get_args(annotation)
    if origin is dict and len(args) == 2 and dict in (args[1], get_origin(args[1])):
        return "map"
    return "one"


MAX_COUNT = 10**9
"""Largest step, epoch, sample or batch count a spec may give: more than any run reaches."""


class DataParams(Params):
    """Parameters every dataset accepts."""

    n_train: int | None = Field(None, ge=1, le=MAX_COUNT,
                                description="training samples (None: all)")
    n_test: int | None = Field(None, ge=1, le=MAX_COUNT,
                               description="held-out samples (None: all)")
    classes: int | list[int] | None = Field(
        None, description="class subset: a count C' (sampled from the seed) or explicit ids"
    )
    reference_size: int = Field(256, ge=1, le=MAX_COUNT,
                                description="fixed reference set for metrics")
    batch_size: int = Field(128, ge=1, le=MAX_COUNT, description="training batch size")


class MetricParams(Params):
    """Parameters every metric accepts."""

    every: int | None = Field(
        None, ge=1, le=MAX_COUNT,
        description="evaluate at steps 0, every, 2*every, ...; always at the end"
    )


Direction = Literal["higher", "lower", "diagnostic"]
BINARY = "0/1"


@dataclass(frozen=True)
class FieldDoc:
    """What one field of a metric measures: a description, its unit ("" when
    dimensionless; ``BINARY``, "0/1", for an outcome that is 0 or 1, whose one-sample claims
    get exact rate intervals), which way is better (``diagnostic``: neither) and whether it
    is a time to an event (``censored``: NaN until the event, so a run that ends without it
    is censored at its budget; claims rank such runs above every observed time)."""

    description: str
    unit: str = ""
    direction: Direction = "diagnostic"
    censored: bool = False

    @property
    def binary(self) -> bool:
        """The field is a 0/1 outcome."""
        return self.unit == BINARY
