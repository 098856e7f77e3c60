"""The version of geobench's code that produces numbers (part of every cell's id)."""

__version__ = "0.1.0"
