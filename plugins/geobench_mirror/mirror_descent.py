"""Mirror descent as a ``torch.optim.Optimizer``.

Update (per parameter group, with the group's mirror map):

    u  = ∇R(θ)                    (the dual variable)
    u⁺ = u − η (∇L(θ) + wd·θ)
    θ⁺ = ∇Q(u⁺)

The dual variable u is kept in the optimizer state (one buffer per parameter, like a
momentum buffer) rather than recomputed as ∇R(θ) at every step: a round trip
∇Q(∇R(θ)) in float32 has relative error ~ε·|u| (sinh amplifies the error of asinh), and
recomputing would add that error at every step, a drift that is systematic over
thousands of steps and of the same size as the per-step update for small step sizes.
Keeping u costs one parameter-sized buffer and makes the dual iterate exact up to the
rounding of the additions.  u is initialised as ∇R(θ) computed in float64; if a
parameter is written outside the optimizer after a step (detected by its version
counter, e.g. ``load_state_dict`` on the model or an in-place edit under ``no_grad``),
its dual variable is re-derived from the new θ.  Writes through ``.data`` bypass the
version counter and are not seen.

Flat buffers.  The parameters of a group that have a dual variable are bucketed by
(device, dtype), and a bucket keeps their duals in one flat buffer; ``state[p]["dual"]``
is a view into it, so ``state_dict`` still holds one dual per parameter, and a dual put
into the state from outside (``load_state_dict``) is copied into the buffer at the next
step.  Besides the map's own arithmetic, a step costs memory traffic and per-call
overhead, hence no concatenation and no parameter-sized temporaries.  On CPU a large parameter is
processed in chunks of ``_CHUNK`` elements: each chunk of u is updated and mapped
(``MirrorMap.grad_Q_into``, writing θ straight into the parameter's memory) while it is
in cache, so a map's several elementwise passes touch main memory about once.  The other
parameters (small or non-contiguous) lie together at the front of the buffer and are
mapped in runs of at most one chunk into a scratch buffer, then copied out: a few calls
per run, not per parameter.  On other devices a bucket is one run (few, large kernels).

Per-step bookkeeping.  A step whose parameters all kept their storage, version and
gradient presence since the last step, and whose state still holds the buffer's views,
skips the per-parameter checks above (a few list comprehensions instead of dictionary
lookups per parameter: on a GPU, where an SGD step of ResNet-18 takes ~0.1 ms, that Python
is most of the step).

``compile=True`` runs the map through ``torch.compile``: one fused kernel over each run of
the flat buffer (on a GPU the whole bucket, whatever the map), and on the CPU one fused loop
per large parameter that reads u, g and writes u, θ once.  The learning rate of the fused
loop lives in a device tensor, so a schedule neither recompiles nor copies from the host.
On the CPU the identity map (euclidean) stays eager: it has nothing to fuse, and the fused
loop is slower there than the chunked update and copy.  It compiles at the first step (tens
of seconds on CPU) and again for every new map, set of parameter shapes or weight decay.
docs/performance.md ("Mirror maps on every CPU") has the step times, eager and compiled.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterable
from itertools import accumulate
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer

from geobench_mirror.maps import Euclidean, MirrorMap

_CHUNK = 1 << 18  # elements per chunk on CPU: a chunk and its temporaries stay in cache
_NO_STATE: dict[str, Any] = {}


class _Bucket:
    """The parameters of one group on one (device, dtype), their duals in one buffer.

    ``direct``: indices of the large contiguous parameters, mapped chunk by chunk into
    their own memory.  ``runs``: (start, stop, indices) of the others, whole parameters
    laid out first in ``flat`` and mapped into ``outs`` (views of ``scratch``).
    """

    def __init__(self, params: list[Tensor]) -> None:
        self.params = params
        self.chunk = _CHUNK if params[0].is_cpu else math.inf
        sizes = [p.numel() for p in params]
        self.direct = [i for i, p in enumerate(params)
                       if p.is_contiguous() and sizes[i] >= self.chunk / 4]
        direct = set(self.direct)
        packed = [i for i in range(len(params)) if i not in direct]
        order = packed + self.direct
        offsets = dict(zip(order, accumulate((sizes[i] for i in order), initial=0),
                           strict=False))
        self.flat = torch.zeros(sum(sizes), dtype=params[0].dtype, device=params[0].device)
        self.duals = [self.flat[offsets[i]:offsets[i] + sizes[i]].view(p.shape)
                      for i, p in enumerate(params)]
        self.chunks = {i: self.duals[i].view(-1).split(self.chunk) for i in self.direct}
        self.runs: list[tuple[int, int, list[int]]] = []
        for i in packed:
            stop = offsets[i] + sizes[i]
            if self.runs and stop - self.runs[-1][0] <= self.chunk:
                start, _, run = self.runs[-1]
                self.runs[-1] = start, stop, [*run, i]
            else:
                self.runs.append((offsets[i], stop, [i]))
        largest = [stop - start for start, stop, _ in self.runs]
        largest += [min(sizes[i], self.chunk) for i in self.direct]
        self.scratch = self.flat.new_empty(max(largest))
        self.outs = {i: self.scratch[offsets[i] - start:offsets[i] - start + sizes[i]]
                     .view(params[i].shape) for start, _, run in self.runs for i in run}
        self.ids = [id(p) for p in params]
        # the compiled loop's learning rate, on the device (float32 at least: a bf16 rate
        # would be off by up to 0.4%)
        self.lr = self.flat.new_zeros((), dtype=torch.promote_types(self.flat.dtype,
                                                                    torch.float32))
        self.lr_value = 0.0
        # after the last step: each parameter's version and whether it had a gradient; a
        # step that finds both as they were and every state's dual still the buffer's view
        # skips the per-parameter checks
        self.after: tuple[list[int], list[bool]] | None = None

    def unchanged(self, grads: list[Tensor | None], state: dict[Tensor, Any]) -> bool:
        """Whether nothing touched the parameters or their duals (in the optimizer's
        ``state``) since the last step and the same parameters have a gradient."""
        if self.after is None:
            return False
        versions, live = self.after
        if ([p._version for p in self.params] != versions
                or [g is not None for g in grads] != live):
            return False
        duals = [state.get(p, _NO_STATE).get("dual") for p in self.params]
        return all(map(operator.is_, duals, self.duals))

    def step(self, grads: list[Tensor | None], mirror_map: MirrorMap, lr: float,
             wd: float) -> None:
        """u ← u − η(g + wd·θ), θ ← ∇Q(u) for the parameters whose gradient is not None."""
        self._runs(grads, mirror_map.grad_Q_into, lr, wd)
        for i in self.direct:
            if grads[i] is None:
                continue
            thetas = self.params[i].view(-1).split(self.chunk)
            for u, theta, g in zip(self.chunks[i], thetas,
                                   grads[i].reshape(-1).split(self.chunk), strict=True):
                if wd != 0:
                    g = torch.add(g, theta, alpha=wd, out=self.scratch[:g.numel()])
                mirror_map.grad_Q_into(u.add_(g, alpha=-lr), theta)

    def _runs(self, grads: list[Tensor | None], grad_Q_into: Callable[[Tensor, Tensor], Any],
              lr: float, wd: float) -> None:
        """The update of the packed parameters, run by run: the duals by foreach ops, θ by
        ``grad_Q_into(u, scratch)`` over the run's slice of the flat buffer, copied out."""
        for start, stop, run in self.runs:
            run = [i for i in run if grads[i] is not None]
            if not run or start == stop:
                continue
            params = [self.params[i] for i in run]
            g = [grads[i] for i in run]
            if wd != 0:
                g = torch._foreach_add(g, params, alpha=wd)
            torch._foreach_add_([self.duals[i] for i in run], g, alpha=-lr)
            grad_Q_into(self.flat[start:stop], self.scratch[:stop - start])
            torch._foreach_copy_(params, [self.outs[i] for i in run])

    def step_compiled(self, grads: list[Tensor | None], mirror_map: MirrorMap, lr: float,
                      wd: float) -> None:
        """The same update with the map through ``torch.compile``: one fused kernel over
        each run of the flat buffer (on a GPU the whole bucket is one run), and one fused
        loop reading u, g and writing u, θ for each large parameter (CPU)."""
        self._runs(grads, functools.partial(_compiled_map(), mirror_map.grad_Q), lr, wd)
        live = [i for i in self.direct if grads[i] is not None]
        if not live:
            return
        if lr != self.lr_value:  # a device tensor: a new rate neither recompiles nor syncs
            self.lr.fill_(lr)
            self.lr_value = lr
        _compiled_update()([self.duals[i] for i in live], [grads[i] for i in live],
                           [self.params[i] for i in live], mirror_map.grad_Q, self.lr, wd)


def _per_tensor_update(duals: list[Tensor], grads: list[Tensor], params: list[Tensor],
                       grad_Q: Callable[[Tensor], Tensor], lr: Tensor, wd: float) -> None:
    for u, g, theta in zip(duals, grads, params, strict=True):
        u.sub_(lr * (g.add(theta, alpha=wd) if wd != 0 else g))
        theta.copy_(grad_Q(u))


@functools.cache
def _compiled_update() -> Callable[..., None]:
    # lr is a tensor so that a new learning rate does not recompile; wd is specialised
    return torch.compile(_per_tensor_update)


def _map_into(grad_Q: Callable[[Tensor], Tensor], u: Tensor, out: Tensor) -> None:
    out.copy_(grad_Q(u))


@functools.cache
def _compiled_map() -> Callable[..., None]:
    return torch.compile(_map_into)


class MirrorDescent(Optimizer):
    """Mirror descent ∇R(θ⁺) = ∇R(θ) − η(∇L(θ) + wd·θ) with a separable map per group.

    ``mirror_map=maps.euclidean()`` reproduces ``torch.optim.SGD`` (no momentum) exactly.
    Param groups may carry their own ``mirror_map`` (and ``compile``).  ``state_dict``
    stores each group's map as its ``repr``; loading checks it against the optimizer's own
    maps.  ``compile=True`` evaluates the update with ``torch.compile`` (see the module
    docstring); the result agrees with the default to rounding.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float,
        mirror_map: MirrorMap | None = None,
        weight_decay: float = 0.0,
        *,
        compile: bool = False,
    ) -> None:
        if not lr >= 0:
            raise ValueError(f"invalid learning rate {lr}")
        if not weight_decay >= 0:
            raise ValueError(f"invalid weight_decay {weight_decay}")
        defaults = {
            "lr": lr,
            "mirror_map": mirror_map if mirror_map is not None else Euclidean(),
            "weight_decay": weight_decay,
            "compile": compile,
        }
        super().__init__(params, defaults)
        self._reset()

    def _reset(self) -> None:
        self._written: dict[int, int] = {}  # id(p) -> p._version after its last update
        self._buckets: dict[int, tuple[Any, list[tuple[Any, ...]], list[_Bucket]]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("compile", False)  # pickled before the option existed
        self._reset()

    def _group_buckets(self, index: int, group: dict[str, Any]) -> list[_Bucket]:
        """The group's buckets, rebuilt when its set of parameters with a dual changes.

        Checked in full only when a parameter gained or lost its gradient or its storage
        since the last step (the signature); otherwise the buckets are reused as they are.
        """
        params = group["params"]
        signature = ([p.grad is not None for p in params], [p.data_ptr() for p in params])
        cached = self._buckets.get(index)
        if cached is not None and cached[0] == signature:
            return cached[2]
        members = []
        for p in params:
            if p.grad is not None and p.grad.is_sparse:
                raise RuntimeError("MirrorDescent does not support sparse gradients")
            if p.grad is not None or "dual" in self.state.get(p, ()):
                members.append(p)
        key = [(id(p), p.device, p.dtype, tuple(p.shape), p.is_contiguous()) for p in members]
        if cached is None or cached[1] != key:
            for bucket in cached[2] if cached is not None else ():
                self._remember(bucket)
            layouts: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
            for p in members:
                layouts.setdefault((p.device, p.dtype), []).append(p)
            buckets = [_Bucket(ps) for ps in layouts.values()]
            cached = signature, key, buckets
        self._buckets[index] = signature, key, cached[2]
        return cached[2]

    def _remember(self, bucket: _Bucket) -> None:
        """Record in ``_written`` the versions the bucket's last step left its parameters at."""
        if bucket.after is not None:
            versions, live = bucket.after
            self._written.update((i, v) for i, v, on in zip(bucket.ids, versions, live,
                                                            strict=True) if on)
            bucket.after = None

    def _sync_dual(self, p: Tensor, view: Tensor, mirror_map: MirrorMap, live: bool) -> None:
        """Point p's state at ``view``, its slot in the flat buffer, holding p's dual.

        The dual is copied from the state, or derived from θ if p has a gradient and no
        dual yet or was written outside the optimizer since its last step.
        """
        state = self.state[p]
        dual = state.get("dual")
        seen = self._written.get(id(p))
        if live and (dual is None or (seen is not None and seen != p._version)):
            view.copy_(mirror_map.grad_R(p.detach().to(torch.float64)))
        elif dual is None:
            return
        elif dual is not view:
            view.copy_(dual)
        state["dual"] = view

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for index, group in enumerate(self.param_groups):
            for bucket in self._group_buckets(index, group):
                self._update(bucket, group)
        return loss

    def _update(self, bucket: _Bucket, group: dict[str, Any]) -> None:
        """u ← u − η(g + wd·θ), θ ← ∇Q(u) for the bucket's parameters with a gradient."""
        mirror_map: MirrorMap = group["mirror_map"]
        grads = [p.grad for p in bucket.params]
        if not bucket.unchanged(grads, self.state):
            self._remember(bucket)
            for p, view, g in zip(bucket.params, bucket.duals, grads, strict=True):
                self._sync_dual(p, view, mirror_map, g is not None)
        if group["compile"] and not (bucket.params[0].is_cpu and type(mirror_map) is Euclidean):
            bucket.step_compiled(grads, mirror_map, group["lr"], group["weight_decay"])
        else:
            bucket.step(grads, mirror_map, group["lr"], group["weight_decay"])
        bucket.after = [p._version for p in bucket.params], [g is not None for g in grads]

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        for group in sd["param_groups"]:
            group["mirror_map"] = repr(group["mirror_map"])
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        own = [(group["mirror_map"], group["compile"]) for group in self.param_groups]
        saved = [group.get("mirror_map") for group in state_dict["param_groups"]]
        for i, ((mirror_map, _), theirs) in enumerate(zip(own, saved, strict=False)):
            if theirs != repr(mirror_map):
                raise ValueError(
                    f"param group {i}: the state dict was saved with mirror map {theirs}, "
                    f"this optimizer uses {mirror_map!r}"
                )
        super().load_state_dict(state_dict)
        for group, (mirror_map, compile) in zip(self.param_groups, own, strict=True):
            group["mirror_map"], group["compile"] = mirror_map, compile
        self._reset()  # the flat buffers are rebuilt from the loaded duals at the next step
