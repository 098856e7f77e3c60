"""The alignment metrics inside a real lockstep run of the engine."""

import math

import pytest

from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell

SUITE = """\
name: alignment_tiny
base:
  data: {name: gaussian_mixture, num_classes: 4, dim: 8, n_train: 64, n_test: 32,
         batch_size: 16, reference_size: 24}
  augment: {name: gaussian_noise, sigma: 0.3}
  backbone: {name: mlp, depth: 2, width: 16}
  head: {name: identity}
  objective: {name: cl}
  optimizer: {name: sgd, lr: 0.2, momentum: 0.9}
  train: {steps: 6, device: cpu}
  metrics:
    - {name: cka, every: 3}
    - {name: rsa, every: 3}
    - {name: similarity_gap, every: 3}
    - {name: weight_distance, every: 3}
    - {name: alignment_bound, every: 3}
    - {name: similarity_descent, every: 2}
arms:
  cl: {objective: {name: cl, tau: 0.5}}
  nscl: {objective: {name: nscl, tau: 0.5}}
  supcon: {objective: {name: supcon, tau: 0.5}}
  ce: {objective: {name: ce}}
  cl_prime: {objective: {name: cl, tau: 0.5}, replicate: 1}
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("suite") / "alignment_tiny.yaml"
    path.write_text(SUITE)
    cell = Study(load_suite(path), registry()).cells[0]
    return run_cell(cell)


def _series(result, label, key):
    return {step: v for arm, m, step, v in result.series if arm == label and m == key}


def test_run_completes_with_every_pair_and_arm(result):
    assert result.status == "complete", result.traceback
    for other in ("nscl", "supcon", "ce"):
        for key in ("cka.debiased", "cka.biased", "rsa.value", "rsa.authors_pearson",
                    "similarity_gap.frobenius", "weight_distance.network",
                    "alignment_bound.cka_lower", "alignment_bound.gap_batch"):
            assert f"cl~{other}/{key}" in result.finals
    for arm in ("cl", "nscl", "supcon"):
        assert math.isfinite(result.finals[f"{arm}/similarity_descent.gap"])
    assert math.isnan(result.finals["ce/similarity_descent.gap"])


def test_shared_initialisation_gives_perfect_alignment_at_step_zero(result):
    for other in ("nscl", "supcon", "ce"):
        assert _series(result, f"cl~{other}", "cka.debiased")[0] == pytest.approx(1.0)
        assert _series(result, f"cl~{other}", "weight_distance.network")[0] == 0.0
        assert _series(result, f"cl~{other}", "similarity_gap.frobenius")[0] == pytest.approx(
            0.0, abs=1e-9)
        # the arms then move apart in weight space
        assert _series(result, f"cl~{other}", "weight_distance.network")[6] > 0.0


def test_the_replicate_arm_starts_elsewhere_and_is_measured_against_cl(result):
    distance = _series(result, "cl~cl_prime", "weight_distance.network")[0]
    assert 0.5 < distance < 2.0  # two independent initialisations: about sqrt(2) apart
    assert _series(result, "cl~cl_prime", "cka.debiased")[0] < 0.99
    assert math.isfinite(result.finals["cl_prime/similarity_descent.cka_reference"])


def test_similarity_descent_starts_on_the_network(result):
    steps = _series(result, "cl", "similarity_descent.gap")
    assert sorted(steps) == [0, 2, 4, 6]
    assert steps[0] == pytest.approx(0.0, abs=1e-9)
