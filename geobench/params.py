"""Params models of a plugin's components and the needs / gives contract, at their stable,
torch-free import path (defined in ``geobench.contract.param_models`` and ``.needs``)."""

from geobench.contract.layout import BUILDS, Layout, same_layouts, same_sizes
from geobench.contract.needs import (
    BATCH_NORM,
    IMAGES,
    TEST_SPLIT,
    TWO_ARMS,
    Need,
    Part,
    Values,
    at_least,
    batch_norm_if,
    equal,
    has,
    lacks,
    square,
)
from geobench.contract.param_models import (
    DataParams,
    Direction,
    EmptyParams,
    FieldDoc,
    MetricParams,
    Nested,
    Params,
)

__all__ = ["BATCH_NORM", "BUILDS", "DataParams", "Direction", "EmptyParams", "FieldDoc",
           "IMAGES", "Layout", "MetricParams", "Need", "Nested", "Params", "Part", "TEST_SPLIT",
           "TWO_ARMS", "Values", "at_least", "batch_norm_if", "equal", "has", "lacks",
           "same_layouts", "same_sizes", "square"]
