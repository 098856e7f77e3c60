"""The site's views on small hand-made inputs: the per-seed plot's geometry, the results
CSV as tables, and docs/papers.md read into titles and sections."""

import pytest

from geobench.site.papers import read_papers, section_of
from geobench.site.seedplot import BOTTOM, HEIGHT, TOP, _ticks, seed_plot
from geobench.site.views import across_scales, result_tables


def _unit(seed: int, d: str, excluded: str = "") -> dict[str, str]:
    return {"trial_seed": str(seed), "d": d, "excluded": excluded}


def test_the_seed_plot_maps_d_linearly_and_draws_each_seeds_mean():
    plot = seed_plot([_unit(0, "1.0"), _unit(0, "3.0"), _unit(1, "-1.0"),
                      _unit(2, "", "no value"), _unit(2, "9.0", "diverged")], edge=0.0)
    # drawn: 1, 3, -1 and the edge 0; padded by 8% of the span 4 -> [-1.32, 3.32]
    low, high = -1.32, 3.32

    def y(d):
        return TOP + (HEIGHT - TOP - BOTTOM) * (high - d) / (high - low)

    assert [p[1] for p in plot.points] == pytest.approx([y(1.0), y(3.0), y(-1.0)])
    assert [m[1] for m in plot.means] == pytest.approx([y(2.0), y(-1.0)])  # seed 0: 2
    assert plot.edge == pytest.approx(y(0.0))
    assert [label for _, label in plot.xticks] == ["0", "1"]  # seed 2 has nothing drawn
    assert seed_plot([_unit(0, "", "no value")], 0.0) is None


def test_ticks_are_round_and_inside_the_range():
    assert _ticks(-1.32, 3.32) == [0.0, 2.0]  # step 1 would give 5 > 4 ticks
    assert _ticks(0.0, 1.0) == [0.0, 0.5, 1.0]


def test_the_results_csv_becomes_one_table_per_title_with_a_column_per_metric():
    rows = [{"table": "T", "lr": "0.1", "arm": "", "metric": "acc", "stat": "last",
             "agg": "mean", "value": "0.5", "ci95_half_width": "0.25", "n": "3",
             "expected": "3", "diverged": "0", "shown": "0.5 ± 0.25 (n=3)"},
            {"table": "T", "lr": "0.1", "arm": "", "metric": "loss", "stat": "min",
             "agg": "mean", "value": "", "ci95_half_width": "", "n": "0", "expected": "3",
             "diverged": "3", "shown": "vacuous (n=3/3)"}]
    [table] = result_tables(rows)
    assert table["title"] == "T" and table["keys"] == ["lr"]  # arm is blank throughout
    assert table["columns"] == ["acc", "loss · min"]
    assert table["rows"] == {("0.1",): {"acc": ("0.5 ± 0.25 (n=3)", 0.5),
                                        "loss · min": ("vacuous (n=3/3)", "")}}


def test_papers_md_gives_titles_and_each_sections_first_paragraph(tmp_path):
    path = tmp_path / "papers.md"
    path.write_text('# P\n\n**P1 — "Heads"** (notes).\n\n## P1 Sec 4\n\nFirst\nline.\n\n'
                    "Second.\n\n## P1 Thm 4.1\n\nTheorem.\n")
    papers = read_papers(path)
    assert papers.titles == {"P1": "Heads"}
    assert papers.sections == {"P1 Sec 4": "First line.", "P1 Thm 4.1": "Theorem."}
    assert read_papers(tmp_path / "none.md").sections == {}
    assert section_of("P1 Sec 5 (orbit compression, the authors' definition)") == "P1 Sec 5"


@pytest.mark.parametrize("verdicts,reading", [
    (["holds", "fails"], "changes"), (["holds", "holds"], "holds at every scale"),
    (["holds", "insufficient"], ""), (["holds", "inconclusive"], ""),
    (["fails", "inconclusive", "holds"], "changes"), (["holds"], "")])
def test_across_scales_reads_only_the_scales_that_decide(verdicts, reading):
    assert across_scales(verdicts) == reading
