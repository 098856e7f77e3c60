import numpy as np
import pytest
import torch

from geobench.geometry import effective_rank, embedding_std


def orthonormal(n: int, r: int, seed: int, centred: bool) -> torch.Tensor:
    """n x r orthonormal columns (orthogonal to the all-ones vector when centred)."""
    x = torch.randn(n, r, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    if centred:
        x = x - x.mean(0)
    return torch.linalg.qr(x)[0]


@pytest.mark.parametrize("centre", [False, True])
@pytest.mark.parametrize("r", [1, 3, 10])
def test_effective_rank_of_equal_singular_values_is_the_rank(r, centre):
    u = orthonormal(64, r, 0, centred=True)
    v = orthonormal(20, r, 1, centred=False)
    z = 2.5 * u @ v.T
    assert effective_rank(z, center=centre) == pytest.approx(r, rel=1e-9)


def test_effective_rank_matches_numpy_formula():
    gen = torch.Generator().manual_seed(3)
    z = torch.randn(50, 12, generator=gen) @ torch.diag(torch.logspace(0, -2, 12))
    x = z.double().numpy()
    for centre, data in ((False, x), (True, x - x.mean(0))):
        s = np.linalg.svd(data, compute_uv=False)
        p = s / s.sum()
        assert effective_rank(z, center=centre) == pytest.approx(np.exp(-(p * np.log(p)).sum()))


def test_effective_rank_of_collapsed_batch():
    row = torch.randn(1, 32, generator=torch.Generator().manual_seed(4))
    z = row.repeat(128, 1) * 1000.0  # float32: centring leaves round-off only
    assert effective_rank(z) == 0.0
    assert effective_rank(z, center=False) == pytest.approx(1.0)
    assert effective_rank(torch.zeros(8, 4)) == 0.0


def test_embedding_std_of_collapsed_batch_is_zero():
    row = torch.randn(1, 16, generator=torch.Generator().manual_seed(5))
    scales = torch.rand(64, 1, generator=torch.Generator().manual_seed(6)) + 0.5
    assert embedding_std(row * scales) == pytest.approx(0.0, abs=1e-7)


def test_embedding_std_of_isotropic_gaussian_rows():
    d = 64
    z = torch.randn(8192, d, generator=torch.Generator().manual_seed(7))
    assert embedding_std(z) == pytest.approx(1 / np.sqrt(d), rel=0.02)


def test_embedding_std_matches_loop_reference():
    z = torch.randn(10, 5, generator=torch.Generator().manual_seed(8)).double()
    rows = [r / np.linalg.norm(r) for r in z.numpy()]
    want = np.mean([np.std([row[j] for row in rows], ddof=1) for j in range(5)])
    assert embedding_std(z) == pytest.approx(want, rel=1e-12)
