"""YAML with line numbers (geobench.suite.yamlio): the line of every key, repeated keys, and
the limits on size, encoding, depth and alias expansion."""

import pytest

from geobench.suite.yamlio import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    SuiteError,
    line_of,
    load_yaml,
    parse_yaml,
)

TEXT = """\
name: s
base:
  data:
    name: d
list:
  - 1
  - {a: 2}
"""


def test_every_key_and_item_has_its_line():
    data, lines = parse_yaml(TEXT, "s.yaml")
    assert data == {"name": "s", "base": {"data": {"name": "d"}}, "list": [1, {"a": 2}]}
    assert lines == {("name",): 1, ("base",): 2, ("base", "data"): 3,
                     ("base", "data", "name"): 4, ("list",): 5, ("list", 0): 6,
                     ("list", 1): 7, ("list", 1, "a"): 7}
    assert line_of(lines, ("base", "data", "nope", 3)) == 3  # the longest known prefix
    assert line_of(lines, ("elsewhere",)) is None


def test_an_empty_document_is_none():
    assert parse_yaml("# only a comment\n", "s.yaml") == (None, {})


def test_a_repeated_key_names_both_lines():
    text = "base:\n  optimizer:\n    lr: 0.1\n    momentum: 0.9\n    lr: 0.2\n"
    with pytest.raises(SuiteError) as info:
        parse_yaml(text, "s.yaml")
    assert str(info.value) == ("s.yaml:5: base.optimizer.lr: key 'lr' appears twice in one "
                               "mapping (also line 3)")


def test_merge_keys_may_repeat():
    text = "a: &a {x: 1}\nc: &c {y: 2}\nb:\n  <<: *a\n  <<: *c\n"
    assert parse_yaml(text, "s.yaml")[0]["b"] == {"x": 1, "y": 2}


def test_a_key_is_a_plain_value():
    with pytest.raises(SuiteError, match=r"^s.yaml:2: base: a mapping key is a plain value"):
        parse_yaml("base:\n  ? [a, b]\n  : 1\n", "s.yaml")


@pytest.mark.parametrize("text, message", [
    ("a: [1, 2\n", "s.yaml:2: invalid YAML: expected ',' or ']'"),
    ("d: 2020-13-45\n", "s.yaml:1: invalid YAML value '2020-13-45' (timestamp)"),
    ("a: 1\n---\nb: 2\n", "s.yaml:2: invalid YAML: but found another document"),
    ("a: !!python/name:os.system ''\n", "s.yaml:1: invalid YAML: could not determine a "
                                        "constructor"),
])
def test_syntax_and_value_errors_are_one_line_at_their_line(text, message):
    with pytest.raises(SuiteError) as info:
        parse_yaml(text, "s.yaml")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def _nested(levels: int) -> str:
    return "[" * levels + "x" + "]" * levels  # the scalar sits at depth levels + 1


def test_nesting_is_limited_to_max_depth_levels():
    data, _ = parse_yaml(_nested(MAX_DEPTH - 1), "s.yaml")
    for _ in range(MAX_DEPTH - 1):
        data = data[0]
    assert data == "x"
    with pytest.raises(SuiteError, match=f"s.yaml:1: YAML nested more than {MAX_DEPTH} levels"):
        parse_yaml(_nested(MAX_DEPTH), "s.yaml")


def test_depth_counts_aliases_expanded():
    half = MAX_DEPTH // 2 + 2
    text = f"a: &a {_nested(half)}\nb: {'[' * half}*a{']' * half}\n"
    with pytest.raises(SuiteError, match="nested more than .* \\(aliases expanded\\)"):
        parse_yaml(text, "s.yaml")


def _bomb(extra: int) -> str:
    """{a: [x], b: [*a] x 100, c: [*b] x 496 + [x] x extra}: 1 root (line 1) + 3 keys + 2 (a) +
    201 (b) + 1 + 496 * 201 + extra (c) = 99904 + extra nodes once aliases are copies."""
    return ("a: &a [x]\nb: &b [" + ", ".join(["*a"] * 100) + "]\nc: ["
            + ", ".join(["*b"] * 496 + ["x"] * extra) + "]\n")


def test_nodes_are_counted_with_aliases_as_copies():
    data, _ = parse_yaml(_bomb(MAX_NODES - 99904), "s.yaml")
    assert len(data["c"]) == 496 + 96 and data["c"][0][99] == ["x"]
    with pytest.raises(SuiteError, match=f"^s.yaml:1: more than {MAX_NODES} YAML nodes"):
        parse_yaml(_bomb(MAX_NODES - 99904 + 1), "s.yaml")


def test_a_recursive_alias_is_refused():
    with pytest.raises(SuiteError, match="recursive alias"):
        parse_yaml("base: &b {data: *b}\n", "s.yaml")


def test_files_are_at_most_max_bytes_of_utf8(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(SuiteError, match=f"{MAX_BYTES + 1} bytes; a suite file is at most "
                                         f"{MAX_BYTES} bytes"):
        load_yaml(big)
    edge = tmp_path / "edge.yaml"
    edge.write_bytes(b"a: 1\n" + b"#" * (MAX_BYTES - 5))
    assert load_yaml(edge)[0] == {"a": 1}
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("a: 1\nb: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SuiteError, match=r"latin.yaml:2: not UTF-8 text \(byte 0xe9\)"):
        load_yaml(latin)
    with pytest.raises(SuiteError, match="cannot read the file"):
        load_yaml(tmp_path / "missing.yaml")


def test_a_suite_error_is_one_line():
    assert str(SuiteError("first\nsecond")) == "first second"
