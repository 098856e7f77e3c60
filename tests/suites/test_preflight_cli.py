"""``geobench preflight``: one line per design point and a table; a cut that breaks a
component's params is a one-line error naming the arm and the key."""

from geobench.cli import main


def test_preflight_runs_the_selected_design_point(capsys):
    code = main(["preflight", "suites/collapse.yaml", "--only", "optimizer.lr=0.64",
                 "--only", "head.norm=none", "--steps", "3", "--batch", "8"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("suites/collapse.yaml [smoke]: 1 design points of 17 cells, 3 steps")
    table = [line for line in out.splitlines() if line.startswith("| norm=none")]
    assert len(table) == 1 and "| complete " in table[0] and "|       3 |" in table[0]


def test_a_cut_below_a_params_limit_is_one_line_per_metric(capsys):
    code = main(["preflight", "suites/collapse.yaml", "--only", "optimizer.lr=0.64",
                 "--only", "head.norm=none", "--metric", "samples=1"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 3  # the three metrics of the suite that take samples
    for i, line in enumerate(lines):
        assert line.startswith("collapse cell ") and f"arm relu: metrics.{i}.samples:" in line
