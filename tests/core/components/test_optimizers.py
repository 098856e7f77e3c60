"""The core optimizers: LARS by hand, AdamW's decoupled decay in closed form."""

import numpy as np
import torch
from torch import nn

from geobench.components.lars import LARS
from geobench.contract.interfaces import BuildContext
from geobench.contract.manager import load_registry


def test_lars_one_step_by_hand():
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(4, 3, dtype=torch.float64))
    b = nn.Parameter(torch.randn(4, dtype=torch.float64))
    gw, gb = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    W, B, GW, GB = (t.detach().numpy().copy() for t in (w, b, gw, gb))
    lr, mom, wd, eta = 0.5, 0.9, 0.01, 0.002
    opt = LARS([w, b], lr=lr, momentum=mom, weight_decay=wd, eta=eta)
    velocity_w, velocity_b = np.zeros_like(W), np.zeros_like(B)
    for _ in range(2):  # the second step exercises the momentum buffer
        w.grad, b.grad = gw.clone(), gb.clone()
        opt.step()
        g = GW + wd * W
        trust = eta * np.sqrt((W**2).sum()) / np.sqrt((g**2).sum())
        velocity_w = mom * velocity_w + trust * g
        W = W - lr * velocity_w
        velocity_b = mom * velocity_b + GB  # bias: no weight decay, no trust ratio
        B = B - lr * velocity_b
        np.testing.assert_allclose(w.detach().numpy(), W, rtol=1e-13)
        np.testing.assert_allclose(b.detach().numpy(), B, rtol=1e-13)


def test_lars_trust_ratio_is_one_for_zero_weights():
    w = nn.Parameter(torch.zeros(2, 2, dtype=torch.float64))
    opt = LARS([w], lr=1.0, momentum=0.0, weight_decay=0.0)
    w.grad = torch.ones(2, 2, dtype=torch.float64)
    opt.step()
    assert torch.equal(w.detach(), -torch.ones(2, 2, dtype=torch.float64))


def test_adamw_decays_weights_decoupled_from_the_gradient():
    net = nn.Linear(3, 2, bias=False)
    before = net.weight.detach().clone()
    ctx = BuildContext(seed=0, device=torch.device("cpu"), model=net)
    opt = load_registry().build("optimizers", {"name": "adamw", "lr": 0.1,
                                               "weight_decay": 0.5}, ctx)
    net.weight.grad = torch.zeros_like(net.weight)
    opt.step()  # zero gradient: Adam's step is 0, only p <- p (1 - lr wd) remains
    torch.testing.assert_close(net.weight.detach(), before * (1 - 0.1 * 0.5))
