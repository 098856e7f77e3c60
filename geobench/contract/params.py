"""The torch-free part of the plugin contract: parameter models, nested component fields
and metric field docs.

Registering a component needs only these, so listing components never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Params(BaseModel):
    """Base of every component's parameter model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


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


def nested_specs(value: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """(location inside the field, spec) of every component spec in a nested field's value:
    the value itself when it has a ``name``, else each value of a mapping or item of a list."""
    if value is None:
        return []
    if isinstance(value, dict) and "name" not in value:
        return [((key,), spec) for key, spec in value.items()]
    if isinstance(value, list):
        return [((i,), spec) for i, spec in enumerate(value)]
    return [((), value)]


class DataParams(Params):
    """Parameters every dataset accepts."""

    n_train: int | None = Field(None, ge=1, description="training samples (None: all)")
    n_test: int | None = Field(None, ge=1, description="held-out samples (None: all)")
    classes: int | list[int] | None = Field(
        None, description="class subset: a count C' (sampled from the seed) or explicit ids"
    )
    reference_size: int = Field(256, ge=1, description="fixed reference set for metrics")
    batch_size: int = Field(128, ge=1, description="training batch size")


class MetricParams(Params):
    """Parameters every metric accepts."""

    every: int | None = Field(
        None, ge=1, description="evaluate at steps 0, every, 2*every, ...; always at the end"
    )


Direction = Literal["higher", "lower", "diagnostic"]


@dataclass(frozen=True)
class FieldDoc:
    """What one field of a metric measures: a description, its unit ("" when
    dimensionless) and which way is better (``diagnostic``: neither)."""

    description: str
    unit: str = ""
    direction: Direction = "diagnostic"
