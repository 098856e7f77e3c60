"""Every shipped suite is valid in each profile, runs >= 5 trial seeds and states claims."""

from pathlib import Path

import pytest

from geobench.contract.plugins import registry
from geobench.suite import expand, load_suite

SUITES = sorted((Path(__file__).resolve().parents[2] / "suites").glob("*.yaml"))


@pytest.mark.parametrize("path", SUITES, ids=[p.stem for p in SUITES])
def test_shipped_suite_states_claims_and_runs_five_trial_seeds(path):
    loaded = load_suite(path)
    assert loaded.suite.claims, f"{path.name} declares no claims"
    for profile in ("smoke", "full"):
        cells = expand(loaded, registry(), profile)
        assert len({c.trial_seed for c in cells}) >= 5, (path.name, profile)
    for claim in loaded.suite.claims:  # a claim's metric is one the suite measures
        mid = claim.metric.rpartition("/")[2].partition(".")[0]
        measured = {m["id"] for spec in cells[0].arms.values() for m in spec["metrics"]}
        assert mid in measured | {"loss"}, (path.name, claim.id)
