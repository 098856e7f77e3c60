"""Reading a suite file (geobench.suite.load): its structure checked, and errors written as
``file:line: dotted.path: what is wrong``."""

import pytest

from geobench.suite.load import LoadedSuite, format_loc, load_suite
from geobench.suite.yamlio import SuiteError

GOOD = """\
name: s
base:
  optimizer: {name: sgd, lr: 0.1}
seeds: [0, 1]
claims:
  - {id: c, statement: s, metric: m.f, expect: '> 0'}
"""


def _write(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_a_loaded_suite_keeps_its_path_and_lines(tmp_path):
    loaded = load_suite(_write(tmp_path, GOOD))
    assert loaded.path == str(tmp_path / "s.yaml") and loaded.suite.seeds == [0, 1]
    assert loaded.lines[("base", "optimizer", "lr")] == 3
    assert loaded.where(("base", "optimizer", "lr")) == f"{loaded.path}:3: base.optimizer.lr"
    assert loaded.where(("claims", 0, "expect")) == f"{loaded.path}:6: claims[0].expect"
    assert loaded.where(("profiles", "full")) == f"{loaded.path}: profiles.full"  # not written
    assert loaded.where(()) == loaded.path
    assert str(loaded.fail(("seeds", 1), "bad")) == f"{loaded.path}:4: seeds[1]: bad"


@pytest.mark.parametrize("text, where, words", [
    (GOOD.replace("seeds: [0, 1]", "seeds: [0, 0]"), ":4: seeds: ", "trial seed 0 appears twice"),
    (GOOD.replace("expect: '> 0'", "expect: 'more'"), ":6: claims[0].expect: ", "pattern"),
    (GOOD.replace("name: s\n", ""), ": name: ", "missing required field 'name'"),
    (GOOD + "grids: {}\n", ":7: grids: ", "unknown field 'grids' (did you mean 'grid'?)"),
    (GOOD.replace("seeds: [0, 1]", "seeds: [0, x]"), ":4: seeds: ", ""),
])
def test_a_schema_error_is_one_line_at_the_key(tmp_path, text, where, words):
    path = _write(tmp_path, text)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    message = str(info.value)
    assert message.startswith(f"{path}{where}") and words in message, message
    assert "\n" not in message


def test_files_that_are_no_suite(tmp_path):
    with pytest.raises(SuiteError, match="nope.yaml: no such suite file"):
        load_suite(tmp_path / "nope.yaml")
    with pytest.raises(SuiteError, match="a suite is a YAML mapping with at least 'name'"):
        load_suite(_write(tmp_path, "- a\n- b\n"))
    with pytest.raises(SuiteError, match="a suite is a YAML mapping"):
        load_suite(_write(tmp_path, ""))


def test_format_loc():
    assert format_loc(("grid", "optimizer.lr", 2)) == "grid.optimizer.lr[2]"
    assert format_loc(("claims", 0, "also", 1, "metric")) == "claims[0].also[1].metric"
    assert format_loc(("--set", "optimizer.lr")) == "--set optimizer.lr"
    assert format_loc(()) == ""
    assert LoadedSuite("p.yaml", None, {}).where(("a",)) == "p.yaml: a"
