"""Params models of a plugin's components, at their stable, torch-free import path (defined
in ``geobench.contract.params``)."""

from geobench.contract.params import DataParams, Direction, FieldDoc, MetricParams, Nested, Params

__all__ = ["DataParams", "Direction", "FieldDoc", "MetricParams", "Nested", "Params"]
