"""The study floor: a suite file read and validated once and the questions every command
asks of it (``pipeline.Study``), and the command-line options that open one
(``arguments``)."""

from geobench.study.pipeline import Study

__all__ = ["Study"]
