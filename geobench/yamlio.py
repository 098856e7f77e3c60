"""YAML loading that remembers the line of every key, for errors that point into the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[Any, ...]


class SuiteError(ValueError):
    """A problem in a suite file, already phrased as one line for the user."""


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = path + (key.value,)
            lines[child] = key.start_mark.line + 1
            _walk(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), lines)


def load_yaml(path: str | Path) -> tuple[Any, dict[Path_, int]]:
    """Parse ``path``; return the data and a map from key path to 1-based line number."""
    text = Path(path).read_text()
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SuiteError(f"{path}{where}: invalid YAML: {problem}") from None
    lines: dict[Path_, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """Line of the longest prefix of ``path`` that the file has."""
    for cut in range(len(path), 0, -1):
        if path[:cut] in lines:
            return lines[path[:cut]]
    return None
