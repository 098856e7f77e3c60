"""The results site built from a small published leaderboard with known values: counts,
units and per-seed plots against the stored values, valid HTML, links that resolve, and
the folder rules."""

import csv
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from geobench.cli import main
from geobench.publish.output import OutputError
from geobench.site.build import build_site
from tests.core.site.helpers import accuracy, parse, publish, table_rows, text


def _copy(boards: Path, folder: Path, leave_out: str = "") -> Path:
    """The published files of ``boards`` copied into ``folder``, but ``leave_out``."""
    folder.mkdir()
    for p in boards.iterdir():
        if p.name != leave_out:
            (folder / p.name).write_bytes(p.read_bytes())
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    boards, store = publish(root)
    out = root / "site"
    build_site(boards, out, root / "docs" / "papers.md")
    return root, boards, out


def test_the_pages_are_the_index_the_paper_the_suite_and_each_claim(built):
    _, _, out = built
    assert sorted(p.name for p in out.glob("*.html")) == [
        "claim-tiny--above.html", "claim-tiny--both.html", "claim-tiny--paired.html",
        "claims.html", "index.html",
        "paper-P9.html", "suite-tiny.html"]


def test_the_index_counts_the_verdicts_of_the_stored_values(built):
    # paired: d = 0.5 - 0.01 seed > 0 at every seed, holds; above: 0.3 + 0.02 seed < 0.5,
    # fails; both: 0.3 + 0.02 seed and 0.8 + 0.01 seed > 0.25, holds
    [row] = table_rows(parse(built[2] / "index.html"), "suites")
    assert row[:5] == ["tiny", "smoke", "8", "exploration seeds", "3"]
    assert row[5:9] == ["2 / 2", "1 / 1", "0 / 0", "0 / 0"]


def test_a_claim_page_lists_every_unit_with_its_values(built):
    root, boards, out = built
    tree = parse(out / "claim-tiny--paired.html")
    units = table_rows(tree, "units")
    expected = [[str(s), accuracy(0.2, s), accuracy(0.05, s)] for s in range(4)]
    assert [[u[0], float(u[4]), float(u[5])] for u in units] == \
        [[s, pytest.approx(a, abs=1e-4), pytest.approx(b, abs=1e-4)] for s, a, b in expected]
    assert [float(u[6]) for u in units] == pytest.approx([a - b for _, a, b in expected],
                                                          abs=1e-4)
    with (boards / "tiny_claims.csv").open(newline="") as fh:
        assert len(units) == sum(r["claim"] == "paired" for r in csv.DictReader(fh))
    circles = [e for e in tree.iter() if str(e.tag).endswith("}circle")]
    assert len(circles) == 4  # one point per unit on the per-seed plot (SVG namespace)
    assert "P9 Thm 1 (the step)" in text(tree.find("body"))


def test_a_claim_with_parts_shows_each_part_and_no_single_effect(built):
    root, boards, out = built
    [row] = [r for r in table_rows(parse(out / "claims.html"), "claims-list")
             if r[2] == "both"]
    assert row[5:7] == ["all 2 parts (on its page)", ""]
    tree = parse(out / "claim-tiny--both.html")
    headings = [text(h) for h in tree.iter("h3")]
    assert [h.split(":")[0] for h in headings] == ["part 1", "part 2"]
    units = table_rows(tree, "units")
    expected = [accuracy(0.05, s) - 0.25 for s in range(4)] + \
        [accuracy(0.2, s) - 0.25 for s in range(4)]
    assert [float(u[6]) for u in units] == pytest.approx(expected, abs=1e-4)


def test_the_paper_page_puts_each_claim_under_the_result_it_cites(built):
    tree = parse(built[2] / "paper-P9.html")
    sections = {text(s.find("h2")): s for s in tree.iter("section")}
    assert list(sections) == ["P9 Thm 1", "P9 Sec 2"]  # the order of docs/papers.md
    assert "Steps help." in text(sections["P9 Thm 1"])
    rows = {r[0]: r for r in ([text(td) for td in tr.findall("td")]
                              for tr in sections["P9 Sec 2"].iter("tr") if tr.findall("td"))}
    row = rows["above"]
    assert row[0] == "above" and row[-2].startswith("fails") and row[-1] == ""


def test_every_page_is_valid_html_and_every_link_and_image_resolves(built):
    out = built[2]
    ids = {p.name: {e.get("id") for e in parse(p).iter() if e.get("id")}
           for p in out.glob("*.html")}
    for page in out.glob("*.html"):
        tree = parse(page)
        title = text(tree.find("head/title"))
        assert title.startswith("geobench results") and "<" not in title, page.name
        targets = [a.get("href") for a in tree.iter("a")] + \
            [e.get("src") for e in tree.iter() if e.tag in ("img", "script")] + \
            [e.get("href") for e in tree.iter("link")]
        for target in targets:
            parts = urlsplit(target)
            assert not parts.scheme and not parts.netloc, (page.name, target)  # offline
            assert (out / parts.path).is_file(), (page.name, target)
            if parts.fragment:
                assert parts.fragment in ids[parts.path], (page.name, target)


def test_the_results_table_is_the_results_csv(built):
    root, _, out = built
    rows = table_rows(parse(out / "suite-tiny.html"), "results")
    assert [r[0] for r in rows] == ["0.05", "0.2"]
    mean = sum(accuracy(0.2, s) for s in range(4)) / 4
    assert rows[1][1].startswith(f"{mean:.4g} ± ") and rows[1][1].endswith("(n=4)")
    page = (root / "leaderboards" / "tiny.md").read_text()
    assert f"| **{rows[1][1]}** |" in page  # as the page prints it (the best, in bold)


def test_a_rebuild_replaces_the_site_and_other_folders_are_refused(built, tmp_path):
    root, boards, out = built
    (out / "index.html").write_text("stale")
    build_site(boards, out)
    assert "stale" not in (out / "index.html").read_text()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="did not write; name a new or empty folder"):
        build_site(boards, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_missing_file_names_itself(built, tmp_path):
    root, boards, _ = built
    copy = _copy(boards, tmp_path / "boards", leave_out="tiny_claims.csv")
    with pytest.raises(OutputError, match=re.escape(f"{copy / 'tiny_claims.csv'}: missing")):
        build_site(copy, tmp_path / "site")


def test_the_command_builds_from_the_boards_or_from_the_store(built, tmp_path, capsys):
    root, boards, out = built
    assert main(["site", "--boards", str(boards), "--out", str(tmp_path / "a")]) == 0
    assert main(["site", "--store", str(root / "db.sqlite"), "--suites",
                 str(root / "suites"), "--out", str(tmp_path / "b")]) == 0
    assert "wrote 7 pages" in capsys.readouterr().out
    for name in ("index.html", "claim-tiny--paired.html"):
        a, b = (parse(tmp_path / f / name) for f in "ab")
        assert table_rows(a, "units") == table_rows(b, "units")
        assert table_rows(a, "suites") == table_rows(b, "suites")
    assert main(["site", "--boards", str(tmp_path / "none"), "--out",
                 str(tmp_path / "c")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_rows_carry_what_the_filters_read(built):
    tree = parse(built[2] / "claims.html")
    rows = [tr for t in tree.iter("table") for tr in t.find("tbody").findall("tr")]
    assert [(r.get("data-verdict"), r.get("data-status"), r.get("data-paper")) for r in rows] \
        == [("holds", "pre-registered", "P9"), ("fails", "pre-registered", "P9"),
            ("holds", "pre-registered", "P9")]
    assert Path(built[2] / "static" / "site.js").is_file()


def test_the_templates_script_and_style_are_shipped():
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[3]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["geobench"]
    shipped = {p for pattern in patterns for p in (root / "geobench").glob(pattern)}
    site = root / "geobench" / "site"
    files = {p for folder in ("templates", "static") for p in (site / folder).iterdir()}
    assert files and files <= shipped


def test_a_record_naming_a_file_outside_its_folder_is_refused(built, tmp_path):
    root, boards, _ = built
    copy = _copy(boards, tmp_path / "boards")
    record = (copy / "tiny.json").read_text()
    (copy / "tiny.json").write_text(record.replace('"values": "tiny_values.csv.gz"',
                                                   '"values": "../secret.csv"'))
    with pytest.raises(OutputError, match="'../secret.csv' is not a plain file name"):
        build_site(copy, tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_a_failed_build_keeps_the_site_it_would_replace(built, tmp_path):
    root, boards, out = built
    copy = _copy(boards, tmp_path / "boards", leave_out="tiny_claims.png")
    site = tmp_path / "site"
    build_site(boards, site)
    before = sorted(p.name for p in site.iterdir())
    with pytest.raises(OutputError, match="tiny_claims.png: missing"):
        build_site(copy, site)
    assert sorted(p.name for p in site.iterdir()) == before


def test_the_suite_page_links_what_each_cell_ran_under(built):
    out = built[2]
    links = [a.get("href") for a in parse(out / "suite-tiny.html").iter("a")]
    assert "data/tiny_cells.csv" in links
    assert (out / "data" / "tiny_cells.csv").read_text() == \
        (built[1] / "tiny_cells.csv").read_text()
