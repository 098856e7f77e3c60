"""Params models of a plugin's components and the needs / gives contract, at their stable,
torch-free import path (defined in ``geobench.contract.params`` and ``.needs``)."""

from geobench.contract.layout import BUILDS, same_layouts
from geobench.contract.needs import (
    BATCH_NORM,
    IMAGES,
    TWO_ARMS,
    Need,
    at_least,
    batch_norm_if,
    equal,
    has,
    lacks,
    one_of_each,
    square,
)
from geobench.contract.params import (
    DataParams,
    Direction,
    EmptyParams,
    FieldDoc,
    MetricParams,
    Nested,
    Params,
)

__all__ = ["BATCH_NORM", "BUILDS", "DataParams", "Direction", "EmptyParams", "FieldDoc",
           "IMAGES", "MetricParams", "Need", "Nested", "Params", "TWO_ARMS", "at_least",
           "batch_norm_if", "equal", "has", "lacks", "one_of_each", "same_layouts", "square"]
