"""Similarity descent: the Sigma-space losses against loop formulas, their gradients
against finite differences, the metric's bookkeeping of the realised batches, and its CKA
against the reference arm against a numpy computation."""

import math

import numpy as np
import pytest
import torch
from geobench_alignment import losses
from geobench_alignment.descent import (
    DescentParams,
    SimilarityDescent,
    sigma_gradient,
    sigma_loss,
)
from geobench_alignment.objectives import (
    NSCL,
    ContrastiveParams,
    CrossEntropy,
    NSCLParams,
    NTXent,
    SupCon,
)

from geobench.contract.interfaces import StepEvent
from geobench.geometry import similarity_matrix
from geobench.train.loader import batches

from .helpers import arm, blobs, context

TAU = 0.5


def loop_loss(kind, S, y, tau=TAU):
    """Sample-level loss: both views of sample i read row i of S."""
    b = S.shape[0]
    e = [[math.exp(float(S[i, k]) / tau) for k in range(b)] for i in range(b)]
    total = 0.0
    for i in range(b):
        others = [k for k in range(b) if k != i]
        if kind == "cl":
            den = e[i][i] + 2 * sum(e[i][k] for k in others)
            total += -float(S[i, i]) / tau + math.log(den)
        elif kind.startswith("nscl"):
            negs = 2 * sum(e[i][k] for k in others if y[k] != y[i])
            if kind == "nscl_nopos" and negs == 0:
                b -= 1  # no negative: the anchor drops out of the mean
                continue
            den = negs + (e[i][i] if kind == "nscl" else 0.0)
            total += -float(S[i, i]) / tau + math.log(den)
        else:
            same = [k for k in others if y[k] == y[i]]
            den = e[i][i] + 2 * sum(e[i][k] for k in others)
            pos = (float(S[i, i]) + 2 * sum(float(S[i, k]) for k in same)) / tau
            total += -pos / (1 + 2 * len(same)) + math.log(den)
    return total / b if b else 0.0


OBJECTIVES = {
    "cl": NTXent(ContrastiveParams(tau=TAU)),
    "nscl": NSCL(NSCLParams(tau=TAU)),
    "nscl_nopos": NSCL(NSCLParams(tau=TAU, positive_in_denominator=False)),
    "supcon": SupCon(ContrastiveParams(tau=TAU)),
}


def _block(seed=0, b=6):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(b, 3, generator=g, dtype=torch.float64)
    return similarity_matrix(z), torch.tensor([0, 1, 0, 2, 1, 0])[:b]


@pytest.mark.parametrize("kind", sorted(OBJECTIVES))
def test_sigma_loss_matches_loop(kind):
    S, y = _block()
    got = float(sigma_loss(OBJECTIVES[kind], S, y))
    assert got == pytest.approx(loop_loss(kind, S, y), rel=1e-10)


@pytest.mark.parametrize("kind", sorted(OBJECTIVES))
@pytest.mark.parametrize("labels", [[0, 1, 0, 2, 1, 0], [0, 0, 0, 0, 0, 0], [3, 1, 2, 0, 4, 5]])
def test_sigma_loss_is_the_objective_on_the_tiled_view_matrix(kind, labels):
    S, _ = _block(seed=2)
    S = S + 0.1 * torch.randn(6, 6, generator=torch.Generator().manual_seed(0),
                              dtype=torch.float64)  # not symmetric: rows are read as anchors
    y = torch.tensor(labels)
    tiled = S.repeat(2, 2) / TAU
    obj = OBJECTIVES[kind]
    ref = {
        "cl": lambda: losses.nt_xent_from_logits(tiled),
        "nscl": lambda: losses.nscl_from_logits(tiled, y, True),
        "nscl_nopos": lambda: losses.nscl_from_logits(tiled, y, False),
        "supcon": lambda: losses.supcon_from_logits(tiled, y),
    }[kind]()
    assert float(sigma_loss(obj, S, y)) == pytest.approx(float(ref), rel=1e-10, abs=1e-12)
    assert float(sigma_loss(obj, S, y)) == pytest.approx(loop_loss(kind, S, y), rel=1e-10,
                                                          abs=1e-12)


@pytest.mark.parametrize("kind", sorted(OBJECTIVES))
def test_sigma_gradient_matches_finite_differences_of_symmetric_variables(kind):
    S, y = _block(seed=1)
    grad = sigma_gradient(OBJECTIVES[kind], S, y)
    h = 1e-6
    for i, k in [(0, 0), (0, 1), (2, 4), (3, 5), (5, 5)]:
        plus, minus = S.clone(), S.clone()
        for M, sgn in ((plus, h), (minus, -h)):
            M[i, k] += sgn
            if i != k:
                M[k, i] += sgn
        fd = (loop_loss(kind, plus, y) - loop_loss(kind, minus, y)) / (2 * h)
        assert float(grad[i, k]) == pytest.approx(fd, rel=1e-5, abs=1e-9)
        assert float(grad[k, i]) == pytest.approx(float(grad[i, k]))


def _run(metric, a, data, steps, lrs, seed=7, reference=None):
    """Drive the metric as the engine does: evaluated before the update of each scheduled
    step, told of every step's batch after it (the arm itself is not trained here)."""
    outs = {}
    for batch in batches(data, seed, steps + 1):
        if batch.step in metric_steps(metric.every, steps):
            ctx = context(data, a, reference=reference, step=batch.step, total=steps,
                          batch=batch, lrs=lrs[: batch.step])
            outs[batch.step] = metric(ctx)
        if batch.step < steps:
            metric.observe(StepEvent(batch.step, steps, "b", a, batch, [batch.x, batch.x],
                                     lrs[batch.step], None))
    return outs


def metric_steps(every, total):
    return set(range(0, total + 1, every)) | {total}


def test_one_step_is_the_gradient_step_on_the_realised_batch():
    data = blobs(n=48, batch_size=8)
    a = arm(OBJECTIVES["cl"])
    metric = SimilarityDescent(DescentParams(every=1))
    _run(metric, a, data, steps=1, lrs=[0.3])
    z = a.embed(data.train_x).detach()
    expected = similarity_matrix(z)
    first = next(iter(batches(data, 7, 1)))
    idx = first.index
    g = sigma_gradient(OBJECTIVES["cl"], expected[idx][:, idx], data.train_y[idx])
    expected[idx[:, None], idx[None, :]] -= 0.3 * g
    assert torch.allclose(metric.sigma, expected)


def test_sparse_schedule_folds_in_the_same_batches():
    data = blobs(n=48, batch_size=8)
    a = arm(OBJECTIVES["nscl"])
    lrs = [0.1 * (t + 1) for t in range(10)]
    dense = SimilarityDescent(DescentParams(every=1))
    sparse = SimilarityDescent(DescentParams(every=4))
    out_d = _run(dense, a, data, 10, lrs)
    out_s = _run(sparse, a, data, 10, lrs)
    assert torch.allclose(dense.sigma, sparse.sigma)
    for step in (0, 4, 8, 10):
        assert out_d[step] == pytest.approx(out_s[step], nan_ok=True)


def test_zero_learning_rate_keeps_the_start_and_gap_equals_drift():
    data = blobs(n=48, batch_size=8)
    a = arm(OBJECTIVES["supcon"])
    metric = SimilarityDescent(DescentParams(every=2))
    ctx0 = context(data, a, step=0, total=4, batch=next(iter(batches(data, 7, 1))))
    out0 = metric(ctx0)
    assert out0["gap"] == pytest.approx(0.0, abs=1e-9) and math.isnan(out0["relative_gap"])
    with torch.no_grad():
        a.head.weight.mul_(-0.5).add_(0.3)  # the network moves, the proxy does not (lr 0)
    steps = list(batches(data, 7, 3))
    for b in steps[:2]:
        metric.observe(StepEvent(b.step, 4, "b", a, b, [b.x, b.x], 0.0, None))
    out = metric(context(data, a, step=2, total=4, batch=steps[2], lrs=[0.0, 0.0]))
    assert out["proxy_drift"] == pytest.approx(0.0, abs=1e-12)
    assert out["gap"] == pytest.approx(out["net_drift"]) and out["net_drift"] > 0
    assert out["relative_gap"] == pytest.approx(1.0)


def test_unobserved_steps_are_an_error_not_a_guess():
    data = blobs(n=48, batch_size=8)
    metric = SimilarityDescent(DescentParams())
    a = arm(OBJECTIVES["cl"])
    metric(context(data, a, step=0, total=3))
    with pytest.raises(RuntimeError, match="training step 0 was not observed"):
        metric(context(data, a, step=2, total=3, lrs=[0.1, 0.1]))


def test_ce_and_oversized_sets_report_nan():
    data = blobs(n=48, batch_size=8)
    metric = SimilarityDescent(DescentParams())
    out = metric(context(data, arm(CrossEntropy(4, 3))))
    assert all(math.isnan(v) for v in out.values())
    out = SimilarityDescent(DescentParams(max_train=10))(
        context(data, arm(OBJECTIVES["cl"])))
    assert all(math.isnan(v) for v in out.values())


def np_debiased_cka(k, l_):
    """Debiased kernel CKA from the U-statistic of Song et al. (2012), written out in numpy."""
    n = k.shape[0]

    def hsic(a, b):
        a, b = a - np.diag(np.diag(a)), b - np.diag(np.diag(b))
        one = np.ones(n)
        value = (np.trace(a @ b) + (one @ a @ one) * (one @ b @ one) / ((n - 1) * (n - 2))
                 - 2 / (n - 2) * one @ a @ b @ one)
        return value / (n * (n - 3))

    return hsic(k, l_) / math.sqrt(hsic(k, k) * hsic(l_, l_))


def np_sigma(the_arm, x):
    """Row-normalised Z Z^T of the head embeddings of x."""
    with torch.no_grad():
        z = the_arm.embed(x).double().numpy()
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    return z @ z.T


def np_subset(n, m):
    return np.rint(np.linspace(0, n - 1, m)).astype(int)


CKA_FIELDS = ("cka_reference", "net_cka_reference")


def test_reference_is_the_arm_itself_at_step_0_gives_cka_one():
    data = blobs(n=48, batch_size=8)
    a = arm(OBJECTIVES["cl"])
    out = SimilarityDescent(DescentParams(eval_size=20))(context(data, a, reference=a))
    assert out["net_cka_reference"] == pytest.approx(1.0, abs=1e-12)
    assert out["cka_reference"] == pytest.approx(1.0, abs=1e-6)  # proxy = network's Sigma


def test_cka_against_another_arm_matches_numpy():
    data = blobs(n=48, batch_size=8)
    a, ref = arm(OBJECTIVES["nscl"], seed=0), arm(OBJECTIVES["cl"], seed=1)
    metric = SimilarityDescent(DescentParams(every=6, eval_size=20))
    out = _run(metric, a, data, steps=6, lrs=[5.0] * 6, reference=ref)[6]
    idx = np_subset(48, 20)
    x = data.train_x[torch.from_numpy(idx)]
    sigma_ref = np_sigma(ref, x)
    proxy = metric.sigma.numpy()[np.ix_(idx, idx)]
    assert out["net_cka_reference"] == pytest.approx(np_debiased_cka(np_sigma(a, x), sigma_ref),
                                                     abs=1e-9)
    assert out["cka_reference"] == pytest.approx(np_debiased_cka(proxy, sigma_ref), abs=1e-9)
    assert abs(out["cka_reference"] - out["net_cka_reference"]) > 1e-3  # the proxy moved


def test_no_reference_gives_nan_cka_and_keeps_the_other_fields():
    data = blobs(n=48, batch_size=8)
    out = SimilarityDescent(DescentParams(eval_size=20))(context(data, arm(OBJECTIVES["cl"])))
    assert all(math.isnan(out[f]) for f in CKA_FIELDS)
    assert all(math.isfinite(out[f]) for f in ("gap", "net_drift", "proxy_drift"))


@pytest.mark.parametrize("case", ["ce", "oversized"])
def test_without_proxy_the_network_cka_is_still_measured(case):
    data = blobs(n=48, batch_size=8)
    if case == "ce":
        a, params = arm(CrossEntropy(4, 3)), DescentParams(eval_size=20)
    else:
        a, params = arm(OBJECTIVES["cl"]), DescentParams(eval_size=20, max_train=10)
    ref = arm(OBJECTIVES["cl"], seed=1)
    out = SimilarityDescent(params)(context(data, a, reference=ref))
    x = data.train_x[torch.from_numpy(np_subset(48, 20))]
    expected = np_debiased_cka(np_sigma(a, x), np_sigma(ref, x))
    assert out["net_cka_reference"] == pytest.approx(expected, abs=1e-9)
    assert all(math.isnan(v) for k, v in out.items() if k != "net_cka_reference")


def test_fewer_than_four_tracked_samples_give_nan_cka():
    data = blobs(n=48, batch_size=8)
    a = arm(OBJECTIVES["cl"])
    out = SimilarityDescent(DescentParams(eval_size=3))(context(data, a, reference=a))
    assert all(math.isnan(out[f]) for f in CKA_FIELDS) and math.isfinite(out["gap"])


def test_pair_gap_is_the_distance_between_two_single_loss_proxies():
    """The paired proxy equals a separate run under the reference's loss from the same
    start on the same batches; pair_tightness is that distance over the bound's formula."""
    tau, c = 4.0, 6  # a finite bound of moderate size
    data = blobs(n=48, batch_size=8, classes=c)
    a = arm(NSCL(NSCLParams(tau=tau)), seed=3)
    ref = arm(NTXent(ContrastiveParams(tau=tau)), seed=3)  # the same weights
    lrs = [0.5] * 6
    paired = SimilarityDescent(DescentParams(every=3))
    out = _run(paired, a, data, steps=6, lrs=lrs, reference=ref)[6]
    alone = SimilarityDescent(DescentParams(every=3))
    _run(alone, ref, data, steps=6, lrs=lrs)  # CL's own proxy, no reference
    expected = float(torch.linalg.norm(paired.sigma - alone.sigma))
    assert out["pair_gap"] == pytest.approx(expected, rel=1e-12) and expected > 0
    t, b = len(lrs), 8
    eps = math.sqrt(math.log(t * b / 0.05) / (2 * b))
    bound = (math.exp(sum(lrs) / (2 * tau**2 * b)) * sum(lrs) / (tau * math.sqrt(b))
             * 2 * math.exp(2 / tau) * (1 / c + eps) / (1 - 1 / c - eps))
    assert out["pair_tightness"] == pytest.approx(expected / bound, rel=1e-10)
    # Corollary 1 on the pair, from numpy: centred CKA and rho = D / ||H Sigma_CL H||_F
    k, ref = paired.sigma.double().numpy(), alone.sigma.double().numpy()
    h = np.eye(len(k)) - 1 / len(k)
    hk, hr = h @ k @ h, h @ ref @ h
    cka = (hk * hr).sum() / (np.linalg.norm(hk) * np.linalg.norm(hr))
    rho = bound / np.linalg.norm(hr)
    assert out["pair_cka"] == pytest.approx(cka, rel=1e-9)
    assert out["pair_cka_lower"] == pytest.approx((1 - rho) / (1 + rho), rel=1e-9)
    assert rho < 1  # an informative bound here
    assert out["pair_cka_excess"] == pytest.approx(out["pair_cka"] - (1 - rho) / (1 + rho))


def test_pair_fields_are_left_out_where_there_is_no_pair():
    data = blobs(n=48, batch_size=8)
    cl = arm(OBJECTIVES["cl"])
    own = _run(SimilarityDescent(DescentParams(every=2)), cl, data, steps=2, lrs=[0.3] * 2,
               reference=cl)[2]
    ce = _run(SimilarityDescent(DescentParams(every=2)), cl, data, steps=2, lrs=[0.3] * 2,
              reference=arm(CrossEntropy(4, 3)))[2]
    same_loss = _run(SimilarityDescent(DescentParams(every=2)), arm(OBJECTIVES["cl"], seed=5),
                     data, steps=2, lrs=[0.3] * 2, reference=cl)[2]  # CL' against CL
    for out in (own, ce, same_loss):
        assert "pair_gap" not in out and "pair_tightness" not in out
