"""``geobench list``'s layout (geobench.cli.listing): within the width, a long name on a
line of its own, descriptions wrapped under the name column."""

from pydantic import Field

from geobench.cli import main
from geobench.cli.listing import kind_lines, size, wrap
from geobench.contract.param_models import Params
from geobench.contract.registry import Entry


class TanhParams(Params):
    hidden: int = Field(64, ge=1, description="hidden width of the gated tanh layer")


def _entry(name: str) -> Entry:
    return Entry("heads", name, lambda p, c: None, TanhParams,
                 "a gated tanh head whose gate is learned per unit", "my_plugin (my-dist)",
                 "0.2.0")


def test_long_name_gets_its_own_line_and_lines_fit():
    lines = kind_lines("heads", [_entry("tanh"), _entry("my_plugin_scaled_tanh_with_gate")],
                       60)
    assert lines == [
        "heads:",
        "  tanh  a gated tanh head whose gate is learned per unit",
        "        [my_plugin (my-dist) 0.2.0]",
        "      hidden: int ≥ 1 = 64 — hidden width of the gated",
        "          tanh layer",
        "  my_plugin_scaled_tanh_with_gate",
        "        a gated tanh head whose gate is learned per unit",
        "        [my_plugin (my-dist) 0.2.0]",
        "      hidden: int ≥ 1 = 64 — hidden width of the gated",
        "          tanh layer",
    ]


def test_wrap_keeps_the_origin_whole():
    assert wrap("a b", 14, "", "  ", "[p (d) 1.0]") == ["a b", "  [p (d) 1.0]"]
    assert wrap("a", 14, "", "  ", "[p (d) 1.0]") == ["a [p (d) 1.0]"]


def test_wrap_counts_bytes_and_cuts_long_words():
    assert wrap("≥≥≥ ab", 8, "", "") == ["≥≥", "≥ ab"]
    assert wrap("", 10, "  x", "") == ["  x"]
    assert all(size(line) <= 8 for line in wrap("a" * 20 + " b", 8, "  ", "    "))


def test_list_fits_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(line.encode()) for line in lines) <= 100
    assert not [line for line in lines if "geobench." in line and "PredictorParams" in line]
    assert "      hidden: int ≥ 1 | None = None — hidden width (None: the head's hidden)" \
        not in lines  # the predictor's field is listed under its parent
    assert any(line.startswith("      predictor.depth: int in [1, 4] = 2") for line in lines)
