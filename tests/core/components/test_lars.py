"""LARS (geobench.components.lars) beyond the plain step of test_optimizers.py: the trust
ratio and decay on every parameter when biases are not excluded, zero norms, closures."""

import numpy as np
import pytest
import torch
from torch import nn

from geobench.components.lars import LARS


def test_one_step_with_biases_treated_like_weights():
    torch.manual_seed(1)
    b = nn.Parameter(torch.randn(5, dtype=torch.float64))
    g = torch.randn(5, dtype=torch.float64)
    B, G = b.detach().numpy().copy(), g.numpy().copy()
    lr, wd, eta = 0.3, 0.1, 0.01
    opt = LARS([b], lr=lr, momentum=0.5, weight_decay=wd, eta=eta, exclude_bias_and_norm=False)
    b.grad = g.clone()
    opt.step()
    d = G + wd * B
    trust = eta * np.linalg.norm(B) / np.linalg.norm(d)
    np.testing.assert_allclose(b.detach().numpy(), B - lr * trust * d, rtol=1e-13)


def test_a_zero_gradient_gives_a_trust_ratio_of_one():
    w = nn.Parameter(torch.ones(2, 2, dtype=torch.float64))
    opt = LARS([w], lr=0.5, momentum=0.0, weight_decay=0.0, eta=0.001)
    w.grad = torch.zeros(2, 2, dtype=torch.float64)
    opt.step()
    assert torch.equal(w.detach(), torch.ones(2, 2, dtype=torch.float64))  # moved by 0
    w.grad = torch.full((2, 2), 3.0, dtype=torch.float64)
    opt.step()  # ||w|| = 2, ||g|| = 6: trust 0.001 * 2 / 6
    torch.testing.assert_close(w.detach(), torch.full((2, 2), 1 - 0.5 * 3 * 0.002 / 6,
                                                      dtype=torch.float64))


def test_parameters_without_gradients_are_left_alone_and_the_closure_runs():
    w, frozen = nn.Parameter(torch.ones(3, 3)), nn.Parameter(torch.ones(3, 3))
    opt = LARS([w, frozen], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure).detach()) == 9.0
    assert torch.equal(frozen.detach(), torch.ones(3, 3)) and frozen not in opt.state
    assert not torch.equal(w.detach(), torch.ones(3, 3))


def test_a_negative_learning_rate_is_refused():
    with pytest.raises(ValueError, match="invalid learning rate -0.1"):
        LARS([nn.Parameter(torch.ones(1))], lr=-0.1)
