"""Params models of a plugin's components, at their stable, torch-free import path (defined
in ``geobench.contract.params``)."""

from geobench.contract.params import (
    DataParams,
    Direction,
    EmptyParams,
    FieldDoc,
    MetricParams,
    Nested,
    Params,
)

__all__ = ["DataParams", "Direction", "EmptyParams", "FieldDoc", "MetricParams", "Nested",
           "Params"]
