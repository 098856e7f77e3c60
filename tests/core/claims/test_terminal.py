"""The claims table on a terminal: within 120 columns, statements only with --wide, and a
conjunction's parts as numbered rows with their own values (hand-computed in
test_claims_also)."""

from geobench.claims.terminal import terminal_table
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict
from geobench.cli import main
from geobench.suite.schema import Claim
from tests.core.claims.test_claims_also import _main, _store, _suite

LONG_ID = "a_claim_id_long_enough_to_need_two_lines_in_its_column"
STATEMENT = "A statement of a paper " + "that runs on " * 20 + "and on"


def _claims(tmp_path, capsys, *flags: str) -> str:
    claim = _main("{metric: knn.accuracy, expect: '> 0.3'}").replace(
        "{id: c, statement: s,", f"{{id: {LONG_ID}, statement: '{STATEMENT}',")
    loaded, cells = _suite(tmp_path, claim)
    _store(tmp_path, cells).close()
    assert main(["claims", str(tmp_path / "a.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 *flags]) == 0
    return capsys.readouterr().out


def test_the_terminal_table_fits_120_columns_with_numbered_parts(tmp_path, capsys):
    out = _claims(tmp_path, capsys)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 120
    assert STATEMENT[:30] not in out
    table = lines[:lines.index("")]
    assert all(line.strip() for line in table)  # no blank row inside the table
    assert table[2].split()[:1] == ["a_claim_id_long_enough_to_need_"]
    assert "all 2 parts:" in table[2] and "holds / holds" in table[2]
    starts = [i for i, line in enumerate(table) if line.startswith("part ")]
    parts = [table[i].split() for i in starts]
    assert [p[:4] for p in parts] == [["part", "1", "nccc.accuracy", ">"],
                                      ["part", "2", "knn.accuracy", ">"]]
    first, second = (table[i] for i in starts)
    assert "+0.115 [+0.0945," in first and "+0.136]" in table[starts[0] + 1]
    assert "+0.23 [+0.189, +0.271]" in second
    assert [p[-3] for p in parts] == ["4", "4"] and [p[-1] for p in parts] == ["holds"] * 2
    assert " ".join(lines[lines.index("") + 1:]) == (
        "Pre-registered: 1 claim — raw: 1 holds / 0 fails / 0 inconclusive / 0 insufficient; "
        "Holm (family-wise α = 0.05 over the 1 tested): 1 holds / 0 fails / 0 inconclusive / "
        "0 insufficient.")

def test_wide_shows_each_statement(tmp_path, capsys):
    out = _claims(tmp_path, capsys, "--wide")
    assert STATEMENT in out and f"`{LONG_ID}`" in out


def test_wide_goes_with_neither_units_nor_json(tmp_path, capsys):
    claim = _main("{metric: knn.accuracy, expect: '> 0.3'}")
    _suite(tmp_path, claim)
    assert main(["claims", str(tmp_path / "a.yaml"), "--wide", "--json"]) == 2
    assert "--wide is a form of the claims table" in capsys.readouterr().err


def test_claims_not_in_the_profile_are_named_under_the_table():
    decided = Verdict(Claim(id="k", statement="s", metric="m.f", expect="< 1e-9"), -1.0, -2.0,
                      -0.5, 5, 5, 1, 0, "holds", verdict_holm="holds")
    absent = [Verdict(Claim(id=f"k_full_{i}", statement="s", metric="m.f", expect="> 0"),
                      None, None, None, 0, 0, 0, 0, NOT_IN_PROFILE) for i in (1, 2)]
    lines = terminal_table([decided, *absent]).splitlines()
    assert [line.split()[0] for line in lines[2:lines.index("")] if line[0] != "n"] == ["k"]
    assert f"{NOT_IN_PROFILE} (no cell of it selected): k_full_1, k_full_2" in lines
