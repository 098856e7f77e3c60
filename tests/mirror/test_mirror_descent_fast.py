"""The flat-buffer MirrorDescent against a per-tensor reference of the same update.

The reference below keeps one dual tensor per parameter and applies
u ← u − η(g + wd·θ), θ ← ∇Q(u) tensor by tensor through the maps' public ``grad_R`` and
``grad_Q``: no flat buffer, no chunks, no ``grad_Q_into``.  Its additions are written as
``add(alpha=...)``, so that in the optimizer's dtype it rounds like the optimizer; a
second copy runs in float64 throughout.  Gradients are drawn from a seeded generator,
independent of θ, so that all see the same gradients at every step.
"""

from __future__ import annotations

import copy
import io
from itertools import accumulate

import pytest
import torch
from geobench_mirror import MirrorDescent, maps
from geobench_mirror import mirror_descent as md
from torch import Tensor, nn

from tests.mirror.helpers import Cubic

BUILTIN = [maps.euclidean(), maps.hypentropy(0.1), maps.hypentropy(3.0), maps.pnorm(3.0),
           maps.pnorm(4.5), maps.shifted_pnorm(3.0, 0.5), maps.shifted_pnorm(4.0, 0.05)]


class Reference:
    """Per-tensor mirror descent: one dual tensor per parameter, no optimizer machinery."""

    def __init__(self, groups: list[dict], dtype: torch.dtype) -> None:
        self.groups = [{**g, "theta": [p.detach().clone().to(dtype) for p in g["params"]],
                        "dual": [None] * len(g["params"])} for g in groups]

    def step(self, grads: list[list[Tensor | None]]) -> None:
        for group, gs in zip(self.groups, grads, strict=True):
            m, lr, wd = group["mirror_map"], group["lr"], group.get("weight_decay", 0.0)
            for i, (theta, g) in enumerate(zip(group["theta"], gs, strict=True)):
                if g is None:
                    continue
                if group["dual"][i] is None:
                    group["dual"][i] = m.grad_R(theta.to(torch.float64)).to(theta.dtype)
                step = g.to(theta.dtype).add(theta, alpha=wd)
                u = group["dual"][i] = group["dual"][i].add(step, alpha=-lr)
                group["theta"][i] = m.grad_Q(u)


def make_params(dtype: torch.dtype) -> list[Tensor]:
    """Shapes for every path: large (several chunks of 64), small, non-contiguous, scalar."""
    g = torch.Generator().manual_seed(0)
    shapes = [(40, 23), (7,), (300,), (5, 3), (64,), (2, 3, 5, 5), (), (200, 2), (3,)]
    params = [nn.Parameter(0.3 * torch.randn(s, generator=g, dtype=dtype)) for s in shapes]
    params[3] = nn.Parameter(params[3].detach().t())  # non-contiguous
    params[5] = nn.Parameter(params[5].detach().to(memory_format=torch.channels_last))
    params[7] = nn.Parameter(params[7].detach().t())  # large and non-contiguous
    return params


def groups_of(params: list[Tensor]) -> list[dict]:
    return [
        {"params": params[0:3], "mirror_map": maps.hypentropy(0.1), "lr": 0.05,
         "weight_decay": 0.01},
        {"params": params[3:5], "mirror_map": maps.pnorm(3.0), "lr": 0.02},
        {"params": params[5:7], "mirror_map": maps.shifted_pnorm(3.0, 0.2), "lr": 0.05},
        {"params": params[7:9], "mirror_map": Cubic(), "lr": 0.05, "weight_decay": 0.1},
    ]


def gradients(params: list[Tensor], step: int, gen: torch.Generator) -> list[Tensor | None]:
    """Seeded gradients; params[6] never has one, params[2] only every third step."""
    grads = [0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64) for p in params]
    grads[6] = None
    if step % 3:
        grads[2] = None
    return grads


def beside_references(opt: MirrorDescent, params: list[Tensor], cpu: list[Tensor], groups,
                      steps: int) -> tuple[list[Tensor], list[Tensor]]:
    """Step ``opt`` over ``params`` with seeded gradients beside the per-tensor references
    of ``groups(cpu)`` in ``cpu``'s dtype and in float64; the references' final θ."""
    same = Reference(groups(cpu), cpu[0].dtype)
    exact = Reference(groups(cpu), torch.float64)
    sizes = [len(g["params"]) for g in groups(cpu)]
    gen = torch.Generator().manual_seed(1)
    for step in range(steps):
        grads = gradients(cpu, step, gen)
        for p, g in zip(params, grads, strict=True):
            p.grad = None if g is None else g.to(p.device, p.dtype)
        opt.step()
        split = [grads[a:b] for a, b in zip(accumulate(sizes, initial=0), accumulate(sizes))]
        same.step(split)
        exact.step(split)
    return ([t for g in same.groups for t in g["theta"]],
            [t for g in exact.groups for t in g["theta"]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_the_per_tensor_reference_over_300_steps(monkeypatch, dtype):
    monkeypatch.setattr(md, "_CHUNK", 64)  # several chunks and runs on small tensors
    params = make_params(dtype)
    opt = MirrorDescent(groups_of(params), lr=0.1)
    expected, expected64 = beside_references(opt, params, params, groups_of, 300)
    for p, t, t64 in zip(params, expected, expected64, strict=True):
        scale = float(t64.abs().max())
        torch.testing.assert_close(p.detach(), t, rtol=1e-6, atol=1e-7 * scale)
        rtol, atol = (1e-4, 1e-5 * scale) if dtype == torch.float32 else (1e-12, 0.0)
        torch.testing.assert_close(p.detach().double(), t64, rtol=rtol, atol=atol)
    assert "dual" not in opt.state[params[6]]


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_euclidean_equals_sgd_on_parameters_of_several_chunks(weight_decay):
    torch.manual_seed(0)
    a = [nn.Parameter(torch.randn(n)) for n in (2 * md._CHUNK + 77, md._CHUNK // 3, 5)]
    b = [nn.Parameter(p.detach().clone()) for p in a]
    sgd = torch.optim.SGD(a, lr=0.05, weight_decay=weight_decay)
    mirror = MirrorDescent(b, lr=0.05, weight_decay=weight_decay)
    for _ in range(3):
        for pa, pb in zip(a, b, strict=True):
            pa.grad = torch.randn_like(pa)
            pb.grad = pa.grad.clone()
        sgd.step()
        mirror.step()
        for pa, pb in zip(a, b, strict=True):
            assert torch.equal(pa, pb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_parameters_match_the_reference_at_the_real_chunk_size(dtype):
    torch.manual_seed(0)
    params = [nn.Parameter(0.5 * torch.randn(n, dtype=dtype)) for n in (2 * md._CHUNK + 77, 9)]
    for m in (maps.hypentropy(0.1), maps.pnorm(3.0), maps.shifted_pnorm(3.0, 0.1)):
        opt = MirrorDescent(params, lr=0.1, mirror_map=m, weight_decay=0.01)
        ref = Reference([{"params": params, "mirror_map": m, "lr": 0.1,
                          "weight_decay": 0.01}], dtype)
        for _ in range(3):
            grads = [torch.randn_like(p) for p in params]
            for p, g in zip(params, grads, strict=True):
                p.grad = g
            opt.step()
            ref.step([grads])
        for p, t in zip(params, ref.groups[0]["theta"], strict=True):
            torch.testing.assert_close(p.detach(), t, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("m", [*BUILTIN, Cubic()], ids=repr)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_grad_Q_into_is_grad_Q(m, dtype):
    g = torch.Generator().manual_seed(0)
    u = torch.cat([s * torch.randn(40, generator=g, dtype=torch.float64)
                   for s in (1e-6, 1e-2, 1.0, 5.0)] + [torch.zeros(1, dtype=torch.float64)])
    for values in (u, torch.cat([u, torch.tensor([-25.0, 30.0], dtype=torch.float64)])):
        values = values.to(dtype)  # the second has |u| > 20
        out = torch.full_like(values, float("nan"))
        assert m.grad_Q_into(values, out) is out
        eps = torch.finfo(dtype).eps  # the two may use different forms: a few ulp apart
        torch.testing.assert_close(out, m.grad_Q(values), rtol=8 * eps, atol=0)


def test_state_holds_per_parameter_views_and_a_loaded_state_is_copied_in():
    torch.manual_seed(0)
    params = [nn.Parameter(torch.randn(n)) for n in (3 * md._CHUNK, 10, 4)]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = MirrorDescent(params, lr=0.1, mirror_map=maps.hypentropy(0.5))
    opt.step()
    duals = [opt.state[p]["dual"] for p in params]
    assert len({d.untyped_storage().data_ptr() for d in duals}) == 1  # one flat buffer
    for p, d in zip(params, duals, strict=True):
        torch.testing.assert_close(d, torch.asinh(p.detach() / 0.5), rtol=1e-5, atol=1e-6)

    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    buffer.seek(0)
    fresh = [nn.Parameter(p.detach().clone()) for p in params]
    other = MirrorDescent(fresh, lr=0.1, mirror_map=maps.hypentropy(0.5))
    other.load_state_dict(torch.load(buffer, weights_only=True))
    for p, q in zip(params, fresh, strict=True):
        q.grad = p.grad.clone()
    opt.step()
    other.step()
    for p, q in zip(params, fresh, strict=True):
        assert torch.equal(p, q)
        assert torch.equal(opt.state[p]["dual"], other.state[q]["dual"])
    loaded = [other.state[q]["dual"] for q in fresh]
    assert len({d.untyped_storage().data_ptr() for d in loaded}) == 1


def test_loading_keeps_the_own_compile_setting_and_reads_state_dicts_without_it():
    p = nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    opt = MirrorDescent([p], lr=0.1, mirror_map=maps.pnorm(3.0))
    opt.step()
    saved = opt.state_dict()
    saved["param_groups"][0]["compile"] = True
    other = MirrorDescent([p], lr=0.1, mirror_map=maps.pnorm(3.0))
    other.load_state_dict(saved)
    assert other.param_groups[0]["compile"] is False
    del saved["param_groups"][0]["compile"]  # as saved before the option existed
    other.load_state_dict(saved)
    other.step()


def test_a_dual_written_into_the_state_is_used(monkeypatch):
    monkeypatch.setattr(md, "_CHUNK", 16)
    p = nn.Parameter(torch.linspace(-1.0, 1.0, 50, dtype=torch.float64))
    p.grad = torch.zeros_like(p)
    opt = MirrorDescent([p], lr=0.1, mirror_map=maps.pnorm(3.0))
    opt.step()
    opt.state[p]["dual"] = torch.full_like(p, 4.0)
    opt.step()
    torch.testing.assert_close(p.detach(), torch.full_like(p, 2.0), rtol=1e-15, atol=0)


def test_a_state_replaced_or_removed_after_steps_is_seen():
    """After steps that skip the per-parameter checks, a new state dict (with a dual, or
    none) must still be read: the new dual is used, a removed one is derived from θ."""
    p = nn.Parameter(torch.linspace(-1.0, 1.0, 50, dtype=torch.float64))
    opt = MirrorDescent([p], lr=0.1, mirror_map=maps.pnorm(3.0))
    for _ in range(3):
        p.grad = torch.zeros_like(p)
        opt.step()
    opt.state[p] = {"dual": torch.full_like(p, 4.0)}
    opt.step()
    torch.testing.assert_close(p.detach(), torch.full_like(p, 2.0), rtol=1e-15, atol=0)
    del opt.state[p]
    opt.step()
    torch.testing.assert_close(opt.state[p]["dual"], torch.full_like(p, 4.0), rtol=1e-15,
                               atol=0)


def test_outside_write_resyncs_a_chunked_parameter(monkeypatch):
    monkeypatch.setattr(md, "_CHUNK", 16)
    p = nn.Parameter(torch.linspace(-1.0, 1.0, 50, dtype=torch.float64))
    p.grad = torch.full_like(p, 0.1)
    opt = MirrorDescent([p], lr=0.1, mirror_map=maps.hypentropy(0.5))
    opt.step()
    with torch.no_grad():
        p.mul_(3.0)
    p.grad = torch.zeros_like(p)
    before = p.detach().clone()
    opt.step()
    torch.testing.assert_close(p.detach(), before, rtol=1e-13, atol=0)


def test_a_parameter_that_gets_its_first_gradient_later_starts_from_its_value():
    a, b = nn.Parameter(torch.full((3,), 0.5)), nn.Parameter(torch.full((4,), 0.25))
    opt = MirrorDescent([a, b], lr=0.01, mirror_map=maps.pnorm(3.0))
    a.grad = torch.ones_like(a)
    opt.step()
    assert "dual" not in opt.state[b]
    b.grad = torch.ones_like(b)
    opt.step()
    u = 0.25**2 - 0.01
    torch.testing.assert_close(b.detach(), torch.full((4,), u**0.5), rtol=1e-6, atol=0)


def test_sparse_gradients_are_refused():
    p = nn.Parameter(torch.zeros(3))
    p.grad = torch.zeros(3).to_sparse()
    with pytest.raises(RuntimeError, match="sparse"):
        MirrorDescent([p], lr=0.1).step()


def test_a_deep_copy_steps_like_the_original():
    torch.manual_seed(0)
    p = nn.Parameter(torch.randn(10))
    p.grad = torch.randn(10)
    opt = MirrorDescent([p], lr=0.1, mirror_map=maps.hypentropy(0.3))
    opt.step()
    twin = copy.deepcopy({"p": p, "opt": opt})
    assert twin["opt"].param_groups[0]["params"][0] is twin["p"]
    twin["p"].grad = p.grad.clone()  # Parameter.__deepcopy__ leaves out the gradient
    opt.step()
    twin["opt"].step()
    assert torch.equal(p, twin["p"])


@pytest.mark.slow
def test_compiled_update_agrees_with_the_default(monkeypatch):
    """compile=True (torch.compile, tens of seconds) against the default, lr changing; both
    compiled paths: the map over runs of small parameters, the fused loop over large ones."""
    monkeypatch.setattr(md, "_CHUNK", 64)
    params = make_params(torch.float32)[:5]
    twins = [nn.Parameter(p.detach().clone()) for p in params]

    def groups(ps):
        return [{"params": ps[:3], "mirror_map": maps.hypentropy(0.1), "weight_decay": 0.01},
                {"params": ps[3:], "mirror_map": maps.pnorm(3.0)}]

    eager = MirrorDescent(groups(params), lr=0.05)
    compiled = MirrorDescent(groups(twins), lr=0.05, compile=True)
    gen = torch.Generator().manual_seed(1)
    for step in range(20):
        for opt in (eager, compiled):
            for group in opt.param_groups:
                group["lr"] = 0.05 / (1 + step)
        for i, (p, q) in enumerate(zip(params, twins, strict=True)):
            g = 0.2 * torch.randn(p.shape, generator=gen)
            p.grad, q.grad = (None, None) if i == 2 and step % 3 else (g, g.clone())
        eager.step()
        compiled.step()
    for p, q in zip(params, twins, strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)


def test_the_identity_map_stays_eager_on_the_cpu(monkeypatch):
    """compile=True with euclidean on the CPU takes the eager step (nothing to fuse) and
    still equals SGD."""
    monkeypatch.setattr(md, "_compiled_update", lambda: pytest.fail("compiled"))
    monkeypatch.setattr(md, "_compiled_map", lambda: pytest.fail("compiled"))
    w = nn.Parameter(torch.arange(6.0).reshape(2, 3))
    opt = MirrorDescent([w], lr=0.5, mirror_map=maps.euclidean(), compile=True)
    w.grad = torch.ones(2, 3)
    opt.step()
    torch.testing.assert_close(w.detach(), torch.arange(6.0).reshape(2, 3) - 0.5)


def test_steps_that_skip_the_checks_keep_the_duals_exact():
    """Steps with nothing changed skip the per-parameter checks; a later full check (here:
    one parameter without a gradient) must not mistake the skipped steps' writes for
    outside writes and re-derive the duals from θ (which would round differently)."""
    torch.manual_seed(0)
    params = [nn.Parameter(0.3 * torch.randn(n)) for n in (50, 7)]
    group = {"params": params, "mirror_map": maps.hypentropy(0.1), "lr": 0.05}
    opt = MirrorDescent([dict(group)], lr=0.05)
    ref = Reference([dict(group)], torch.float32)
    gen = torch.Generator().manual_seed(2)
    for step in range(12):
        grads = [torch.randn(p.shape, generator=gen) for p in params]
        if step in (5, 9):
            grads[1] = None
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        opt.step()
        ref.step([grads])
        for p, u in zip(params, ref.groups[0]["dual"], strict=True):
            assert torch.equal(opt.state[p]["dual"], u)  # the same additions, bit for bit


def test_a_storage_swapped_under_the_optimizer_rebuilds_its_buckets():
    """``module.float()`` swaps ``p.data`` without a version bump: the next step must see it."""
    p = nn.Parameter(torch.full((4,), 0.5, dtype=torch.float64))
    p.grad = torch.zeros_like(p)
    opt = MirrorDescent([p], lr=0.1, mirror_map=maps.pnorm(3.0))
    for _ in range(2):
        opt.step()
    p.data = p.data.float()
    p.grad = torch.zeros_like(p)
    opt.step()
    assert opt.state[p]["dual"].dtype == torch.float32
    torch.testing.assert_close(p.detach(), torch.full((4,), 0.5), rtol=1e-7, atol=0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(("compile", "layout"), [
    *((False, layout) for layout in ["groups", *map(repr, BUILTIN)]), (True, "groups")])
def test_the_cuda_path_matches_the_cpu_references(compile, layout):
    """float32 on the GPU over 100 steps, every parameter shape: against the float32
    per-tensor reference on the CPU (every shipped map alone; a tight tolerance, the two
    differ only in the rounding of each map evaluation) and, for the groups (hypentropy,
    p-norm, shifted p-norm and a third-party map), against the float64 reference with the
    tolerance the CPU test holds over 300 steps. Compiled: the groups (one compile set)."""
    cpu = make_params(torch.float32)
    cuda = [nn.Parameter(p.detach().cuda()) for p in cpu]  # strides preserved

    def groups(ps):
        if layout == "groups":
            return groups_of(ps)
        return [{"params": ps, "mirror_map": next(m for m in BUILTIN if repr(m) == layout),
                 "lr": 0.05, "weight_decay": 0.01}]

    opt = MirrorDescent(groups(cuda), lr=0.1, compile=compile)
    thetas, thetas64 = beside_references(opt, cuda, cpu, groups, 100)
    for p, t, t64 in zip(cuda, thetas, thetas64, strict=True):
        scale = float(t64.abs().max())
        torch.testing.assert_close(p.detach().cpu(), t, rtol=1e-5, atol=1e-6 * scale)
        if layout == "groups":
            torch.testing.assert_close(p.detach().cpu().double(), t64, rtol=1e-4,
                                       atol=1e-5 * scale)
