"""Params as a suite writes them (geobench.contract.param_text): types without module
paths, Literal values, Nested specs, constraints and defaults."""

from typing import Annotated, Any, Literal

from pydantic import Field

from geobench.contract.param_models import MAX_COUNT, Nested, Params
from geobench.contract.param_text import param_rows


class Inner(Params):
    depth: int = Field(2, ge=1, le=4, description="layers")


class Example(Params):
    hidden: int = Field(64, ge=1, description="width")
    lam: float = Field(gt=0, description="scale")
    pool: Literal["max", "avg"] = "max"
    rate: float = Field(0.5, gt=0, le=1)
    steps: int | None = Field(None, ge=1, le=MAX_COUNT)
    betas: tuple[float, float] = (0.9, 0.999)
    levels: list[float] = Field(default_factory=lambda: [0.5], min_length=1)
    predictor: Inner | None = None
    mirror_map: Annotated[dict[str, Any] | None, Nested("mirror_maps")] = None
    maps: Annotated[dict[str, dict[str, Any]] | None, Nested("mirror_maps")] = None
    label: str = "a b"


def test_signatures_as_a_suite_writes_them():
    assert [row.signature() for row in param_rows(Example)] == [
        "hidden: int ≥ 1 = 64",
        "lam: float > 0",
        "pool: max | avg = max",
        "rate: float in (0, 1] = 0.5",
        "steps: int ≥ 1 | None = None",
        "betas: tuple[float, float] = [0.9, 0.999]",
        "levels: list[float] of length ≥ 1 = [0.5]",
        "predictor: mapping | None = None",
        "predictor.depth: int in [1, 4] = 2",
        "mirror_map: mirror_maps spec | None = None",
        "maps: dict[str, mirror_maps spec] | None = None",
        "label: str = 'a b'",
    ]


def test_json_record_keeps_every_constraint():
    rows = {row.name: row.record() for row in param_rows(Example)}
    assert rows["steps"] == {"name": "steps", "type": "int | None", "default": "None",
                             "doc": "", "constraints": {"ge": 1, "le": MAX_COUNT}}
    assert rows["lam"]["default"] == "required" and rows["lam"]["constraints"] == {"gt": 0}
    assert rows["predictor.depth"]["doc"] == "layers"
    assert rows["levels"]["constraints"] == {"min_length": 1}
