import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import hessian, jacrev

from geobench.geometry import EffectiveHessian, spectrum_summary

B, D, HIDDEN, M = 6, 4, 5, 3
ACTIVATIONS = {"identity": nn.Identity, "relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}
FUNCTIONS = {"identity": lambda x: x, "relu": torch.relu, "gelu": F.gelu, "tanh": torch.tanh}


def make_head(act: str, bn: bool, d: int = D, hidden: int = HIDDEN, m: int = M, seed: int = 0):
    torch.manual_seed(seed)
    layers = [nn.Linear(d, hidden)]
    if bn:
        layers.append(nn.BatchNorm1d(hidden))
    layers += [ACTIVATIONS[act](), nn.Linear(hidden, m)]
    head = nn.Sequential(*layers).double()
    if bn:  # non-trivial affine parameters and running statistics
        with torch.no_grad():
            head[1].weight.uniform_(0.5, 1.5)
            head[1].bias.uniform_(-0.5, 0.5)
            head[1].running_mean.uniform_(-1, 1)
    return head


def manual_head(head: nn.Sequential, act: str, bn: bool):
    """The head written out with plain tensor ops (batch statistics when bn)."""
    first, last = head[0], head[-1]
    w1, b1, w2, b2 = (p.detach() for p in (first.weight, first.bias, last.weight, last.bias))

    def forward(z: torch.Tensor) -> torch.Tensor:
        x = z @ w1.T + b1
        if bn:
            norm = head[1]
            mean, var = x.mean(0), x.var(0, unbiased=False)
            x = (x - mean) / torch.sqrt(var + norm.eps) * norm.weight.detach() + norm.bias.detach()
        return FUNCTIONS[act](x) @ w2.T + b2

    return forward


def cosine_loss(b: int, m: int, seed: int = 1):
    """Negative cosine similarity of each half of the batch against a constant target."""
    gen = torch.Generator().manual_seed(seed)
    target = torch.randn(b, m, generator=gen, dtype=torch.float64)

    def loss(h: torch.Tensor) -> torch.Tensor:
        half = h.shape[0] // 2
        first = F.cosine_similarity(h[:half], target[half:], dim=1).mean()
        second = F.cosine_similarity(h[half:], target[:half], dim=1).mean()
        return -(first + second) / 2

    return loss


def mse_loss(b: int, m: int, seed: int = 1):
    gen = torch.Generator().manual_seed(seed)
    target = torch.randn(b, m, generator=gen, dtype=torch.float64)
    return lambda h: 0.5 * ((h - target) ** 2).sum(1).mean() + 0.1 * (h**4).mean()


LOSSES = {"cosine": cosine_loss, "mse": mse_loss}


def representation(b: int = B, d: int = D, seed: int = 2) -> torch.Tensor:
    return torch.randn(b, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def references(h_fn, loss, z):
    """Dense H_eff, G and K from torch.func.hessian / jacrev on the written-out head."""
    b, d = z.shape
    zf = z.reshape(-1)
    flat_h = lambda v: h_fn(v.reshape(b, d)).reshape(-1)  # noqa: E731
    full = hessian(lambda v: loss(h_fn(v.reshape(b, d))))(zf)
    h0 = h_fn(z)
    jac = jacrev(flat_h)(zf)
    loss_hess = hessian(loss)(h0).reshape(h0.numel(), h0.numel())
    g = torch.func.grad(loss)(h0).reshape(-1)
    interaction = torch.einsum("i,ijk->jk", g, hessian(flat_h)(zf))
    return full, jac.T @ loss_hess @ jac, interaction


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("bn", [False, True])
@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
def test_dense_operators_match_torch_func_references(act, bn, loss_name):
    head = make_head(act, bn).train()
    loss = LOSSES[loss_name](B, M)
    z = representation()
    eff = EffectiveHessian(head, loss, z)
    full, gauss_newton, interaction = references(manual_head(head, act, bn), loss, z)
    tol = {"rtol": 1e-9, "atol": 1e-12}
    torch.testing.assert_close(eff.full.dense(), full, **tol)
    torch.testing.assert_close(eff.gauss_newton.dense(), gauss_newton, **tol)
    torch.testing.assert_close(eff.interaction.dense(), interaction, **tol)
    split = eff.gauss_newton.dense() + eff.interaction.dense()
    torch.testing.assert_close(split, eff.full.dense(), **tol)
    if not bn:  # the module itself as the reference function
        direct = hessian(lambda v: loss(head(v.reshape(B, D))))(z.reshape(-1))
        torch.testing.assert_close(eff.full.dense(), direct, **tol)


@pytest.mark.parametrize(
    "act, bn, mode",
    [("identity", False, "train"), ("relu", False, "train"), ("relu", True, "eval")],
)
def test_interaction_is_exactly_zero_for_piecewise_linear_heads(act, bn, mode):
    head = make_head(act, bn)
    head.train(mode == "train")
    eff = EffectiveHessian(head, cosine_loss(B, M), representation())
    k = eff.interaction.dense()
    assert torch.count_nonzero(k) == 0
    assert eff.interaction.eigs(which="both").abs().max() == 0
    assert torch.count_nonzero(eff.gauss_newton.dense()) > 0
    assert torch.equal(eff.full.dense(), eff.gauss_newton.dense())


@pytest.mark.parametrize("act", ["gelu", "tanh"])
def test_interaction_is_nonzero_for_smooth_heads(act):
    eff = EffectiveHessian(make_head(act, False), cosine_loss(B, M), representation())
    assert eff.interaction.dense().abs().max() > 1e-3


def test_train_mode_batchnorm_couples_samples_and_leaves_module_untouched():
    head = make_head("relu", True).train()
    running = {k: v.clone() for k, v in head.named_buffers()}
    eff = EffectiveHessian(head, cosine_loss(B, M), representation())
    assert eff.interaction.dense().abs().max() > 1e-3  # BN is curved in z even for ReLU
    for name, value in head.named_buffers():
        assert torch.equal(value, running[name])
    assert all(p.grad is None for p in head.parameters())
    # coupling: block (0, 1) of H_eff (sample 0 vs sample 1) is non-zero
    assert eff.full.dense()[:D, D : 2 * D].abs().max() > 1e-6


def test_lanczos_extremes_of_500_dim_hessian_match_eigvalsh():
    b, d = 20, 25
    head = make_head("gelu", True, d=d, hidden=32, m=16).train()
    loss = cosine_loss(b, 16)
    z = representation(b, d)
    eff = EffectiveHessian(head, loss, z)
    reference = hessian(lambda v: loss(manual_head(head, "gelu", True)(v.reshape(b, d))))(
        z.reshape(-1)
    )
    exact = torch.linalg.eigvalsh(reference)
    eff.full.matvecs = 0
    got = eff.full.eigs(k=1, which="both", tol=1e-8)
    assert eff.full.matvecs < 500
    torch.testing.assert_close(got, exact[[0, -1]], rtol=1e-4, atol=0)


def test_summary_exact_path_matches_numpy_on_reference_hessian():
    head = make_head("tanh", False, hidden=8)
    loss = cosine_loss(B, M)
    z = representation()
    eff = EffectiveHessian(head, loss, z)
    full, gauss_newton, interaction = references(manual_head(head, "tanh", False), loss, z)
    got = eff.summary(rtol=1e-9)
    for name, ref in (("full", full), ("gauss_newton", gauss_newton), ("interaction", interaction)):
        ev = np.linalg.eigvalsh(ref.numpy())
        zero = 1e-9 * np.abs(ev).max()
        assert got[name]["exact"] == 1.0 and got[name]["matvecs"] == B * D
        assert got[name]["lambda_min"] == pytest.approx(ev[0], rel=1e-8)
        assert got[name]["lambda_max"] == pytest.approx(ev[-1], rel=1e-8)
        ends = sorted([abs(ev[0]), abs(ev[-1])])
        assert got[name]["cond_abs"] == pytest.approx(ends[1] / ends[0], rel=1e-6)
        assert got[name]["cond_pos"] == pytest.approx(ev[-1] / ev[ev > zero].min(), rel=1e-6)
        assert got[name]["neg_count"] == (ev < -zero).sum()
        assert got[name]["neg_mass"] == pytest.approx(-ev[ev < -zero].sum(), rel=1e-8)


def test_slq_estimate_close_to_exact_on_moderate_hessian():
    b, d = 16, 25
    head = make_head("gelu", False, d=d, hidden=64, m=32)
    eff = EffectiveHessian(head, cosine_loss(b, 32), representation(b, d))
    exact = spectrum_summary(eff.full)
    estimate = spectrum_summary(eff.full, dense_threshold=0)
    assert estimate["exact"] == 0.0 and estimate["converged"] == 1.0
    assert estimate["lambda_min"] == pytest.approx(exact["lambda_min"], rel=1e-5)
    assert estimate["lambda_max"] == pytest.approx(exact["lambda_max"], rel=1e-5)
    assert abs(estimate["neg_count"] - exact["neg_count"]) <= 0.06 * b * d
    assert estimate["neg_mass"] == pytest.approx(exact["neg_mass"], rel=0.1)


def test_float32_operators_agree_with_float64():
    head = make_head("gelu", True).train()
    loss = cosine_loss(B, M)
    z = representation()
    exact = EffectiveHessian(head, loss, z).full.dense()
    loss32 = lambda h: loss(h.double()).float()  # noqa: E731
    single = EffectiveHessian(head.float(), loss32, z.float())
    assert single.full.dtype == torch.float32
    torch.testing.assert_close(single.full.dense().double(), exact, rtol=1e-3, atol=1e-5)


def test_plain_callable_head_and_dropout_refusal():
    w = torch.randn(M, D, dtype=torch.float64)
    eff = EffectiveHessian(lambda z: torch.tanh(z @ w.T), mse_loss(B, M), representation())
    assert eff.full.dense().shape == (B * D, B * D)
    with pytest.raises(ValueError, match="dropout"):
        EffectiveHessian(nn.Sequential(nn.Linear(D, M), nn.Dropout(0.1)).double().train(),
                         mse_loss(B, M), representation())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_operators_match_cpu():
    head = make_head("gelu", True).train()
    z = representation()
    cpu = EffectiveHessian(head, mse_loss(B, M), z)
    gen = torch.Generator().manual_seed(1)
    target = torch.randn(B, M, generator=gen, dtype=torch.float64).cuda()
    loss = lambda h: 0.5 * ((h - target) ** 2).sum(1).mean() + 0.1 * (h**4).mean()  # noqa: E731
    gpu = EffectiveHessian(head.cuda(), loss, z.cuda())
    torch.testing.assert_close(gpu.full.dense().cpu(), cpu.full.dense())
    torch.testing.assert_close(gpu.gauss_newton.eigs(which="both").cpu(),
                               cpu.gauss_newton.eigs(which="both"))
