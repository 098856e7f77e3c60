"""MirrorDescent against SGD and against the closed-form mirror steps."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from geobench_mirror import MirrorDescent, maps
from torch import nn


def model(seed: int = 0, dtype: torch.dtype = torch.float32) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7, bias=False), nn.ReLU(), nn.Linear(7, 1)).to(dtype)


def batches(n: int, dtype: torch.dtype = torch.float32):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        yield torch.randn(16, 5, generator=g, dtype=dtype), torch.randn(16, 1, generator=g,
                                                                           dtype=dtype)


def train(net: nn.Module, opt: torch.optim.Optimizer, data) -> None:
    for x, y in data:
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_euclidean_equals_sgd_step_for_step(weight_decay):
    a, b = model(), model()
    opt_a = torch.optim.SGD(a.parameters(), lr=0.05, weight_decay=weight_decay)
    opt_b = MirrorDescent(b.parameters(), lr=0.05, mirror_map=maps.euclidean(),
                          weight_decay=weight_decay)
    for x, y in batches(30):
        for net, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
        for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
            assert torch.equal(pa, pb)


def test_hypentropy_step_is_the_closed_form():
    """θ⁺ = λ sinh(asinh(θ/λ) − η g), evaluated independently in numpy float64."""
    lam, lr = 0.1, 0.3
    net = model(dtype=torch.float64)
    opt = MirrorDescent(net.parameters(), lr=lr, mirror_map=maps.hypentropy(lam))
    for x, y in batches(5, torch.float64):
        before = [p.detach().numpy().copy() for p in net.parameters()]
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        grads = [p.grad.numpy().copy() for p in net.parameters()]
        opt.step()
        for p, t, g in zip(net.parameters(), before, grads, strict=True):
            expected = lam * np.sinh(np.arcsinh(t / lam) - lr * g)
            np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-12, atol=1e-15)


def test_pnorm_and_per_group_maps_follow_their_own_formula():
    lr, p = 0.2, 3.0
    net = model(dtype=torch.float64)
    first, second = net[0].weight, net[2].weight
    opt = MirrorDescent([{"params": [first], "mirror_map": maps.pnorm(p)},
                         {"params": [second, net[2].bias]}], lr=lr)
    for x, y in batches(4, torch.float64):
        t1, t2 = first.detach().numpy().copy(), second.detach().numpy().copy()
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        g1, g2 = first.grad.numpy().copy(), second.grad.numpy().copy()
        opt.step()
        u = np.sign(t1) * np.abs(t1) ** (p - 1) - lr * g1
        np.testing.assert_allclose(first.detach().numpy(),
                                   np.sign(u) * np.abs(u) ** (1 / (p - 1)), rtol=1e-11)
        np.testing.assert_allclose(second.detach().numpy(), t2 - lr * g2, rtol=1e-13)


def test_dual_variable_is_kept_in_state():
    net = model()
    opt = MirrorDescent(net.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.05))
    train(net, opt, batches(3))
    for p in net.parameters():
        dual = opt.state[p]["dual"]
        assert dual.dtype == p.dtype
        torch.testing.assert_close(dual, torch.asinh(p.detach() / 0.05), rtol=1e-5, atol=1e-5)


def test_outside_write_resyncs_the_dual_variable():
    net = model(dtype=torch.float64)
    opt = MirrorDescent(net.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.5))
    train(net, opt, batches(2, torch.float64))
    with torch.no_grad():
        net[0].weight.mul_(3.0)
    for p in net.parameters():
        p.grad = torch.zeros_like(p)
    before = net[0].weight.detach().clone()
    opt.step()  # zero gradient: θ must stay where the outside write put it
    torch.testing.assert_close(net[0].weight.detach(), before, rtol=1e-13, atol=0)


def test_state_dict_round_trip_continues_identically():
    maps_ = [maps.hypentropy(0.2), maps.pnorm(3.0)]

    def make():
        net = model()
        params = list(net.parameters())
        groups = [{"params": params[:1], "mirror_map": maps_[0]},
                  {"params": params[1:], "mirror_map": maps_[1]}]
        return net, MirrorDescent(groups, lr=0.05, weight_decay=1e-3)

    data = list(batches(10))
    ref_net, ref_opt = make()
    train(ref_net, ref_opt, data)

    net, opt = make()
    train(net, opt, data[:5])
    buffer = io.BytesIO()
    torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    net2, opt2 = make()
    net2.load_state_dict(saved["model"])
    opt2.load_state_dict(saved["opt"])
    assert opt2.param_groups[0]["mirror_map"] is maps_[0]
    train(net2, opt2, data[5:])
    for a, b in zip(ref_net.parameters(), net2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_loading_a_state_dict_of_another_map_fails():
    net = model()
    opt = MirrorDescent(net.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.2))
    train(net, opt, batches(1))
    other = MirrorDescent(net.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.3))
    with pytest.raises(ValueError, match=r"hypentropy\(lam=0.2\)"):
        other.load_state_dict(opt.state_dict())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda_like_on_cpu():
    cpu = model(dtype=torch.float64)
    gpu = model(dtype=torch.float64).cuda()
    opt_c = MirrorDescent(cpu.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.1))
    opt_g = MirrorDescent(gpu.parameters(), lr=0.1, mirror_map=maps.hypentropy(0.1))
    for x, y in batches(5, torch.float64):
        for net, opt, dev in ((cpu, opt_c, "cpu"), (gpu, opt_g, "cuda")):
            opt.zero_grad()
            ((net(x.to(dev)) - y.to(dev)) ** 2).mean().backward()
            opt.step()
    for a, b in zip(cpu.parameters(), gpu.parameters(), strict=True):
        torch.testing.assert_close(a, b.cpu(), rtol=1e-10, atol=1e-12)
