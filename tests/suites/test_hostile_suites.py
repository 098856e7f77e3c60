"""Malformed suites whose error comes from a bundled plugin's component (the core's corpus
is tests/core/hostile): one line naming the file, line and key; exit 2, nothing stored."""

from pathlib import Path

import pytest

from tests.core.suite.test_hostile_suites import check_corpus_case

HOSTILE = Path(__file__).parent / "hostile"
CORPUS = sorted(HOSTILE.glob("*.yaml"))


def test_the_corpus_is_there():
    assert len(CORPUS) >= 2


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_malformed_suite_gets_one_line(path, command, tmp_path, monkeypatch, capsys):
    check_corpus_case(path, command, tmp_path, monkeypatch, capsys)
