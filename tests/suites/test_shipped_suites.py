"""Every shipped suite is valid in each profile, runs >= 5 trial seeds and states claims."""

import re
from pathlib import Path

import pytest

from geobench.claims.claims_table import paper_link, section_anchor
from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.checks import measured

SUITES = sorted((Path(__file__).resolve().parents[2] / "suites").glob("*.yaml"))


@pytest.mark.parametrize("path", SUITES, ids=[p.stem for p in SUITES])
def test_shipped_suite_states_claims_and_runs_five_trial_seeds(path):
    loaded = load_suite(path)
    assert loaded.suite.claims, f"{path.name} declares no claims"
    for profile in loaded.suite.profiles:
        cells = Study(loaded, registry(), profile).cells
        assert len({c.trial_seed for c in cells}) >= 5, (path.name, profile)
    for claim in loaded.suite.claims:  # a claim's metric is one the suite measures
        mid = claim.metric.rpartition("/")[2].partition(".")[0]
        assert mid in set(measured(cells)) | {"loss"}, (path.name, claim.id)


IMAGE_SUITES = ["alignment", "collapse", "head_depth", "mirror_cifar", "orbit"]
# Claims whose design points need more than Fashion-MNIST's 10 classes (C' = 50, 100); the
# mid profile tests each on its own points through a claim of its own.
BEYOND_MID = {"p3_alignment_rises_with_classes", "p3_alignment_above_noise_floor_100_classes",
              "p3_bound_holds", "p3_bound_holds_for_proxies"}


@pytest.mark.parametrize("name", IMAGE_SUITES)
def test_image_suites_have_a_mid_profile_on_real_images_testing_their_claims(name, tmp_path):
    from geobench.claims.values import StoredValues
    from geobench.claims.verdicts import NOT_IN_PROFILE, evaluate
    from geobench.run.store import Store

    loaded = load_suite(Path(SUITES[0]).parent / f"{name}.yaml")
    cells = Study(loaded, registry(), "mid").cells
    datasets = {spec["data"]["name"] for c in cells for spec in c.arms.values()}
    assert "fashion_mnist" in datasets and datasets <= {"fashion_mnist", "mnist"}
    verdicts = evaluate(loaded, cells, StoredValues(Store(tmp_path / "s.sqlite"), cells),
                        registry())
    absent = {v.claim.id for v in verdicts if v.verdict == NOT_IN_PROFILE}
    ids = {c.id for c in loaded.suite.claims}
    assert absent == ids & BEYOND_MID | {i for i in ids if i.endswith("_full")}


@pytest.mark.parametrize("name", ["alignment", "collapse", "orbit"])
def test_full_scale_claims_are_the_full_profiles_own(name, tmp_path):
    """A claim restated for the full profile (``_full``) selects full cells and no smoke
    cell, so it leaves the smoke verdicts as they were."""
    from geobench.claims.values import StoredValues
    from geobench.claims.verdicts import NOT_IN_PROFILE, evaluate
    from geobench.run.store import Store

    loaded = load_suite(Path(SUITES[0]).parent / f"{name}.yaml")
    full = {c.id for c in loaded.suite.claims if c.id.endswith("_full")}
    assert full
    for profile, present in (("full", True), ("smoke", False)):
        cells = Study(loaded, registry(), profile).cells
        verdicts = evaluate(loaded, cells, StoredValues(Store(tmp_path / f"{profile}.sqlite"),
                                                        cells), registry())
        absent = {v.claim.id for v in verdicts if v.verdict == NOT_IN_PROFILE}
        assert (full & absent) == (set() if present else full), profile


PAPERS = Path(__file__).resolve().parents[2] / "docs" / "papers.md"


@pytest.mark.parametrize("path", SUITES, ids=[p.stem for p in SUITES])
def test_every_claim_source_links_to_a_section_of_the_papers_page(path):
    headings = {line[3:].strip() for line in PAPERS.read_text().splitlines()
                if line.startswith("## ")}
    out = path.parents[1] / "leaderboards"
    for claim in load_suite(path).suite.claims:
        section = re.split(r"[(,]", claim.source)[0].strip()
        assert section in headings, (path.name, claim.id, claim.source)
        link = paper_link(claim.source, out, path)
        assert link.startswith(f"[{claim.source}](../docs/papers.md#"), link


@pytest.mark.parametrize("heading,anchor", [("P1 Thm 4.1", "p1-thm-41"),
                                            ("P2 Thm 4.7/4.8", "p2-thm-4748"),
                                            ("P3 Sec 5, Thm 1", "p3-sec-5"),
                                            ("P1 Sec 5 (guillotine)", "p1-sec-5")])
def test_section_anchors_are_githubs(heading, anchor):
    assert section_anchor(heading) == anchor
