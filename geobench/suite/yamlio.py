"""YAML loading that remembers the line of every key, for errors that point into the file.

The document is composed into nodes and checked before any Python object is built: the file
is at most ``MAX_BYTES``, UTF-8, nested at most ``MAX_DEPTH`` deep, expands (aliases counted
as copies) to at most ``MAX_NODES`` nodes, and no mapping repeats a key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[Any, ...]
MAX_BYTES = 1 << 20
MAX_NODES = 100_000
MAX_DEPTH = 64


class SuiteError(ValueError):
    """A problem in a suite file, already phrased as one line for the user; ``line``: the
    file's line it points at, when it points at one."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(" ".join(str(message).splitlines()))
        self.line = line


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing documents nested more than ``MAX_DEPTH`` deep while it
    composes them (before Python's recursion limit)."""

    depth = 0

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's constructors raise plain ValueError / KeyError for values such as
        ``2020-13-45`` or ``!!bool maybe``: report them as one line at the node."""
        try:
            return super().construct_object(node, deep)
        except SuiteError:
            raise
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            value = node.value if isinstance(node, yaml.ScalarNode) else node.tag
            raise SuiteError(f"{self.name}:{_line(node)}: invalid YAML value {value!r} "
                             f"({node.tag.rsplit(':', 1)[-1]}): {exc}") from None

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise SuiteError(f"{self.name}:{line}: YAML nested more than {MAX_DEPTH} levels "
                                 "deep")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _measure(node: yaml.Node, path: str, seen: dict[int, tuple[int, int]]
                   ) -> tuple[int, int]:
    """Nodes in ``node``, and its depth, once every alias is replaced by a copy (memoised on
    the node graph, so a billion-laughs document is measured in time linear in its text)."""
    if id(node) in seen:
        if seen[id(node)][0] < 0:
            raise SuiteError(f"{path}:{_line(node)}: a YAML alias refers to a node that "
                             "contains it (recursive alias)")
        return seen[id(node)]
    seen[id(node)] = (-1, 0)
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    measured = [_measure(child, path, seen) for child in children]
    size = 1 + sum(n for n, _ in measured)
    depth = 1 + max((d for _, d in measured), default=0)
    if size > MAX_NODES:
        raise SuiteError(f"{path}:{_line(node)}: more than {MAX_NODES} YAML nodes once aliases "
                         "are expanded (an alias bomb?); a suite is smaller")
    if depth > MAX_DEPTH:
        raise SuiteError(f"{path}:{_line(node)}: YAML nested more than {MAX_DEPTH} levels deep "
                         "(aliases expanded)")
    seen[id(node)] = (size, depth)
    return size, depth


def _dotted(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int], file: str) -> None:
    """Record the line of every key and item; refuse repeated keys and non-scalar keys."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise SuiteError(f"{file}:{_line(key)}: {_dotted(path) or 'top level'}: a "
                                 "mapping key is a plain value, not a list or mapping")
            child = path + (key.value,)
            if key.value in seen and key.value != "<<":
                raise SuiteError(f"{file}:{_line(key)}: {_dotted(child)}: key {key.value!r} "
                                 f"appears twice in one mapping (also line {seen[key.value]})")
            seen[key.value] = lines[child] = _line(key)
            _walk(value, child, lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = _line(item)
            _walk(item, path + (i,), lines, file)


def _read_text(path: str) -> str:
    """The file's text: at most ``MAX_BYTES``, UTF-8."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_BYTES:
            raise SuiteError(f"{path}: {size} bytes; a suite file is at most {MAX_BYTES} bytes")
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SuiteError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
                         "save the suite as UTF-8") from None


def load_yaml(path: str | Path) -> tuple[Any, dict[Path_, int]]:
    """Parse ``path``; return the data and a map from key path to 1-based line number."""
    return parse_yaml(_read_text(str(path)), str(path))


def parse_yaml(text: str, path: str) -> tuple[Any, dict[Path_, int]]:
    """Parse ``text`` (named ``path`` in errors) with the checks above; return the data and
    the line of every key path."""
    lines: dict[Path_, int] = {}
    loader = None
    try:
        loader = _Loader(text)
        loader.name = path
        node = loader.get_single_node()
        if node is None:
            return None, lines
        _measure(node, path, {})
        _walk(node, (), lines, path)
        return loader.construct_document(node), lines
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SuiteError(f"{path}{where}: invalid YAML: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """Line of the longest prefix of ``path`` that the file has."""
    for cut in range(len(path), 0, -1):
        if path[:cut] in lines:
            return lines[path[:cut]]
    return None
