"""A published page names every plugin distribution and version its cells used (the core's
included), no path of the machine that wrote it, and links to the docs only where the
link resolves."""

import json
from importlib.metadata import version

from geobench.publish.doclinks import GEOBENCH_DOCS, link_references
from geobench.report.paths import shown_text
from tests.conftest import run_cli
from tests.core.site.helpers import publish
from tests.core.suite_text import small_suite


def test_the_page_names_each_plugin_and_version_the_store_recorded(site, tmp_path):
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    out = run_cli(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                   "--quiet", "--out", str(tmp_path / "boards" / "small.md")],
                  tmp_path / "site", site, toy=True)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "boards" / "small.md").read_text()
    record = json.loads((tmp_path / "boards" / "small.json").read_text())
    core = version("geobench")  # the installed distribution's metadata
    # the toy plugin is installed as the distribution geobench-toy 0.1 (tests/conftest.py);
    # the suite's identity head, SGD and nccc metric are the core's
    line = next(ln for ln in page.splitlines() if ln.startswith("- code: "))
    assert f"; plugins: core (geobench) {core}, toy (geobench-toy) 0.1; torch " in line
    assert " (geobench 0.1.0); plugins: " in line
    assert record["plugins"] == [
        {"name": "core", "distribution": "geobench", "versions": [core]},
        {"name": "toy", "distribution": "geobench-toy", "versions": ["0.1"]}]
    assert record["geobench"] == ["0.1.0"]
    # suite and --out were given as absolute paths from another working folder
    assert str(tmp_path) not in page and str(tmp_path) not in json.dumps(record)
    assert "`geobench leaderboard s.yaml --out small.md`" in page
    assert record["suite_file"] == "s.yaml"


def test_a_page_outside_the_checkout_leaves_the_docs_references_out(tmp_path):
    folder, _ = publish(tmp_path)  # a third party's folder: its own docs/papers.md only
    page = (folder / "tiny.md").read_text()
    record = json.loads((folder / "tiny.json").read_text())
    assert str(tmp_path) not in page and str(tmp_path) not in json.dumps(record)
    assert "docs/claims.md" not in page and "docs/claims.md" not in json.dumps(record)
    note = ("This profile declares no confirmation seeds (`confirm:`): the verdicts read its "
            "exploration seeds.")
    assert record["claims"][0]["note"] == note and f"\n{note}\n" in page
    # the suite's own papers page, beside its folder, is linked relative to the page
    assert "[P9 Thm 1 (the step)](../docs/papers.md#p9-thm-1): " in page


def test_a_page_inside_the_checkout_links_the_docs_section():
    boards = GEOBENCH_DOCS.parent / "leaderboards"
    text = 'Decided here (docs/claims.md, "Confirmation seeds").'
    assert link_references(text, boards) == (
        'Decided here ([docs/claims.md, "Confirmation seeds"]'
        '(../docs/claims.md#confirmation-seeds)).')
    assert "### Confirmation seeds" in (GEOBENCH_DOCS / "claims.md").read_text()
    # a heading found by its start: "Families" is "Families: which Holm column to quote"
    assert link_references('(docs/claims.md, "Families")', boards) == (
        ' ([docs/claims.md, "Families"](../docs/claims.md#families-which-holm-column-to-quote))')
    assert link_references(text, None) == "Decided here."


def test_an_error_quoted_on_a_page_names_no_folder_of_the_machine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    error = (f"FileNotFoundError: No such file: '/home/alice/data/x.npz' (from "
             f"{tmp_path}/runs/a.txt, ratio 1/2)")
    assert shown_text(error) == \
        "FileNotFoundError: No such file: 'x.npz' (from runs/a.txt, ratio 1/2)"
