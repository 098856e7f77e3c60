import math
import warnings

import numpy as np
import pytest
import torch

from geobench.geometry import LinearOperator, lanczos_eigs, spectrum_summary
from geobench.geometry.linalg import lanczos, slq_negative


def matrix_with_spectrum(eigenvalues: torch.Tensor, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    n = eigenvalues.numel()
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64))
    return q @ torch.diag(eigenvalues.double()) @ q.T


def operator(matrix: torch.Tensor) -> LinearOperator:
    return LinearOperator(lambda v: matrix @ v, matrix.shape[0], matrix.dtype, matrix.device)


@pytest.fixture(scope="module")
def known():
    gen = torch.Generator().manual_seed(1)
    eigenvalues = torch.cat([
        -0.5 - torch.rand(40, generator=gen, dtype=torch.float64),
        0.01 + 3 * torch.rand(460, generator=gen, dtype=torch.float64),
    ]).sort().values
    return eigenvalues, matrix_with_spectrum(eigenvalues)


@pytest.mark.parametrize("which", ["smallest", "largest", "both"])
def test_lanczos_extremes_match_known_spectrum(known, which):
    eigenvalues, a = known
    got = lanczos_eigs(lambda v: a @ v, 500, k=2, which=which, tol=1e-8)
    dense = torch.linalg.eigvalsh(a)
    want = {"smallest": dense[:2], "largest": dense[-2:], "both": dense[[0, 1, -2, -1]]}[which]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=0)
    torch.testing.assert_close(got, eigenvalues[[0, 1, -2, -1]] if which == "both" else
                               (eigenvalues[:2] if which == "smallest" else eigenvalues[-2:]),
                               rtol=1e-4, atol=0)


def test_lanczos_is_deterministic_and_reports_convergence(known):
    _, a = known
    first = lanczos(lambda v: a @ v, 500, which="both", seed=3)
    second = lanczos(lambda v: a @ v, 500, which="both", seed=3)
    assert torch.equal(first.eigenvalues, second.eigenvalues)
    assert first.converged and first.iterations < 500
    assert float(first.residuals.max()) <= 1e-6 * float(first.eigenvalues.abs().max())


def test_lanczos_warns_when_iteration_cap_is_hit(known):
    _, a = known
    with pytest.warns(RuntimeWarning, match="did not converge"):
        lanczos_eigs(lambda v: a @ v, 500, which="smallest", tol=1e-12, max_iter=5)


def test_full_krylov_space_gives_exact_eigenvalues():
    eigenvalues = torch.tensor([-3.0, -1.0, 0.5, 2.0, 7.0], dtype=torch.float64)
    a = matrix_with_spectrum(eigenvalues, seed=4)
    got = lanczos_eigs(lambda v: a @ v, 5, k=5, which="smallest")
    torch.testing.assert_close(got, eigenvalues, rtol=1e-10, atol=1e-10)


def test_repeated_eigenvalue_and_zero_operator_converge_without_warning():
    a = matrix_with_spectrum(torch.tensor([2.0] * 30 + [5.0] * 20), seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = lanczos_eigs(lambda v: a @ v, 50, which="both")
        zero = LinearOperator(lambda v: torch.zeros_like(v), 40, torch.float64, "cpu").eigs(
            k=2, which="both"
        )
    torch.testing.assert_close(got, torch.tensor([2.0, 5.0], dtype=torch.float64))
    assert torch.equal(zero, torch.zeros_like(zero))


def test_float32_operator_converges_to_its_precision():
    eigenvalues = torch.linspace(0.1, 4.0, 300, dtype=torch.float64)
    a = matrix_with_spectrum(eigenvalues, seed=5).float()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = operator(a).eigs(which="both")
    torch.testing.assert_close(got, eigenvalues[[0, -1]], rtol=1e-4, atol=0)


def test_linear_operator_dense_and_counter():
    a = matrix_with_spectrum(torch.arange(1.0, 13.0), seed=6)
    op = operator(a)
    torch.testing.assert_close(op.dense(), a)
    assert op.matvecs == 12
    blocked = LinearOperator(lambda v: a @ v, 12, torch.float64, "cpu", matmat=lambda vs: vs @ a.T)
    torch.testing.assert_close(blocked.dense(chunk=5), a)
    assert blocked.matvecs == 12
    op.matvec(torch.ones(12))
    assert op.matvecs == 13


def test_invalid_which_is_rejected(known):
    _, a = known
    with pytest.raises(ValueError, match="which"):
        lanczos_eigs(lambda v: a @ v, 500, which="middle")


def test_slq_negative_count_and_mass_close_to_exact(known):
    eigenvalues, a = known
    negative = eigenvalues[eigenvalues < 0]
    got = slq_negative(lambda v: a @ v, 500, zero=1e-10, probes=8, steps=60)
    assert abs(got.count - negative.numel()) <= 0.03 * 500
    assert got.mass == pytest.approx(float(-negative.sum()), rel=0.1)
    assert got.unresolved < 1.0  # a gap around 0: the bracket closes


def test_slq_negative_with_large_null_space():
    # half the spectrum exactly 0: the Gauss-Radau node at -zero must absorb it
    eigenvalues = torch.cat([
        torch.linspace(-2.0, -0.3, 50), torch.zeros(200), torch.linspace(0.3, 3.0, 150)
    ])
    a = matrix_with_spectrum(eigenvalues, seed=7)
    got = slq_negative(lambda v: a @ v, 400, zero=1e-9, probes=6, steps=60)
    assert abs(got.count - 50) <= 0.03 * 400
    assert got.mass == pytest.approx(float(-eigenvalues[:50].sum()), rel=0.1)
    assert abs(got.unresolved - 200) <= 0.05 * 400  # the null space cannot be signed


def test_slq_negative_brackets_unresolvable_eigenvalues_and_is_deterministic():
    # negatives spread over six decades: those near 0 are below the quadrature's
    # resolution; count <= exact <= count + unresolved (up to probe noise)
    gen = torch.Generator().manual_seed(3)
    magnitudes = 10 ** (-6 * torch.rand(400, generator=gen, dtype=torch.float64))
    signs = torch.where(torch.rand(400, generator=gen) < 0.3, -1.0, 1.0).double()
    a = matrix_with_spectrum(signs * magnitudes, seed=9)
    exact = int((signs < 0).sum())
    got = slq_negative(lambda v: a @ v, 400, zero=1e-12, probes=8, steps=30, seed=5)
    assert got.count < 0.9 * exact and got.unresolved > 0.1 * exact
    assert got.count - 0.05 * 400 <= exact <= got.count + got.unresolved + 0.05 * 400
    assert slq_negative(lambda v: a @ v, 400, zero=1e-12, probes=8, steps=30, seed=5) == got
    many = slq_negative(lambda v: a @ v, 400, zero=1e-12, probes=8, steps=200, seed=5)
    assert many.unresolved < got.unresolved and abs(many.count - exact) < abs(got.count - exact)


def test_slq_negative_probe_stops_once_its_bracket_closes(known):
    _, a = known
    op = operator(a)
    got = slq_negative(op.matvec, 500, zero=1e-10, probes=4, steps=400)
    assert op.matvecs < 4 * 100 and got.unresolved < 0.02 * got.count


def test_summary_of_eigenvalues_closed_form():
    got = spectrum_summary(torch.tensor([-2.0, -1.0, 0.0, 0.5, 4.0], dtype=torch.float64))
    assert got["lambda_min"] == -2.0 and got["lambda_max"] == 4.0
    assert got["cond_abs"] == pytest.approx(2.0)
    assert got["cond_pos"] == pytest.approx(8.0)
    assert got["neg_count"] == 2.0 and got["neg_mass"] == pytest.approx(3.0)
    assert got["exact"] == 1.0


def test_summary_absolute_zero_threshold():
    ev = torch.tensor([-2.0, -1.0, -1e-3, 0.5, 4.0], dtype=torch.float64)
    assert spectrum_summary(ev)["neg_count"] == 3.0
    got = spectrum_summary(ev, atol=0.6)
    assert got["neg_count"] == 2.0 and got["neg_mass"] == pytest.approx(3.0)
    assert got["cond_pos"] == pytest.approx(1.0)  # 0.5 counts as zero: 4 is the smallest


def test_summary_edge_cases():
    zero = spectrum_summary(torch.zeros(4, dtype=torch.float64))
    assert math.isnan(zero["cond_abs"]) and math.isnan(zero["cond_pos"])
    singular = spectrum_summary(torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64))
    assert math.isinf(singular["cond_abs"]) and singular["cond_pos"] == pytest.approx(3.0)
    negative = spectrum_summary(torch.tensor([-3.0, -1.0], dtype=torch.float64))
    assert math.isnan(negative["cond_pos"]) and negative["cond_abs"] == pytest.approx(3.0)


def test_summary_lanczos_path_agrees_with_dense_path(known):
    eigenvalues, a = known
    ev = eigenvalues.numpy()
    dense = spectrum_summary(operator(a))
    estimate = spectrum_summary(operator(a), dense_threshold=100, probes=8, steps=60)
    assert dense["exact"] == 1.0 and estimate["exact"] == 0.0 and estimate["converged"] == 1.0
    assert dense["neg_unresolved"] == 0.0 and estimate["neg_unresolved"] < 1.0
    assert dense["matvecs"] == 500.0 and estimate["matvecs"] < 1000
    assert dense["neg_count"] == float((ev < 0).sum())
    assert dense["cond_pos"] == pytest.approx(ev[-1] / ev[ev > 0].min())
    for key in ("lambda_min", "lambda_max", "cond_abs"):
        assert estimate[key] == pytest.approx(dense[key], rel=1e-5)
    assert abs(estimate["neg_count"] - dense["neg_count"]) <= 0.03 * 500
    assert math.isnan(estimate["cond_pos"])  # indefinite: the smallest positive is interior


def test_summary_lanczos_path_of_definite_operator_is_exact_in_negative_part():
    eigenvalues = torch.linspace(0.5, 5.0, 300, dtype=torch.float64)
    got = spectrum_summary(operator(matrix_with_spectrum(eigenvalues, 8)), dense_threshold=10)
    assert got["neg_count"] == 0.0 and got["neg_mass"] == 0.0
    assert got["cond_pos"] == pytest.approx(10.0, rel=1e-5)
    assert np.isclose(got["cond_abs"], got["cond_pos"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_lanczos_on_cuda_matches_cpu(known):
    _, a = known
    cpu = lanczos_eigs(lambda v: a @ v, 500, which="both")
    gpu_a = a.cuda()
    gpu = lanczos_eigs(lambda v: gpu_a @ v, 500, which="both", device="cuda")
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-8, atol=0)
