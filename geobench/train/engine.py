"""Training loop: one or more arms in lockstep, metric callbacks on their schedules.

Every random draw comes from the cell's trial seed through named streams
(``geobench.train.streams``): each component is built with the global RNG on its own stream
``init/<component>``, so arms (and cells) of one trial seed with the same architecture start
from identical weights (asserted for arms); all arms see the same batches (``data/order``)
and views (``augment/<step>``); each metric instance draws from ``metric/<id>/<step>`` and
leaves training's RNG (``train``) untouched.  An arm with ``replicate: k > 0`` is an
independent run of the same trial seed: its weights, batch order and views come from the
streams ``<name>/replicate<k>`` (``geobench.train.streams.replicate_stream``), training's global
RNG included (``train/replicate<k>``, swapped in around its steps); the data and the metrics'
draws are shared.
"""

from __future__ import annotations

import hashlib
import math
import time
import traceback
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from geobench.contract.api import (
    Arm,
    Augmentation,
    Batch,
    BuildContext,
    Data,
    Metric,
    MetricContext,
    StepEvent,
)
from geobench.contract.plugins import describe_failure
from geobench.contract.plugins import registry as default_registry
from geobench.contract.registry import Registry
from geobench.contract.spec import ArmSpec, Component, TrainSpec
from geobench.records import TRAIN_LOSS_KEY, Cell, CellResult, Status, cross_arm, finals_of
from geobench.train.divergence import DivergenceGuard
from geobench.train.loader import batch_hash, batches, steps_per_epoch
from geobench.train.logs import CellLogs
from geobench.train.phases import in_phase, phase
from geobench.train.precision import fp32_matmuls
from geobench.train.streams import (
    DATA,
    ORDER,
    TRAIN,
    SavedRng,
    augment_stream,
    generator,
    global_rng,
    metric_stream,
    replicate_stream,
    stream_seed,
)

Progress = Callable[[int, int, float], None]
Inputs = dict[int, tuple[Batch, list[torch.Tensor]]]  # replicate -> (batch, views) of a step
CHECK_EVERY = 10  # steps between divergence checks (each check syncs the device)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def total_steps(train: TrainSpec, data: Data) -> int:
    if train.steps is not None:
        return train.steps
    return train.epochs * steps_per_epoch(data)


def scaled_lr(lr: float, train: TrainSpec, batch_size: int) -> float:
    """``lr * (B / base_batch_size) ** k`` with k = 1, 1/2, 1/4 or 0 (``lr_scaling``)."""
    power = {"none": 0.0, "linear": 1.0, "sqrt": 0.5, "fourth_root": 0.25}[train.lr_scaling]
    return lr * (batch_size / train.base_batch_size) ** power


def lr_factor(step: int, total: int, train: TrainSpec) -> float:
    """Multiplier of the base learning rate at ``step`` (0-based)."""
    if train.lr_schedule == "constant":
        return 1.0
    warm = train.warmup_steps
    if step < warm:
        return (step + 1) / warm
    span = max(1, total - warm)
    return 0.5 * (1.0 + math.cos(math.pi * min(step - warm, span) / span))


@dataclass(frozen=True)
class Schedule:
    """Steps at which a metric runs: 0, every, 2*every, ... and always ``total``; a rule,
    never a list of steps (a run may be 10⁹ steps long)."""

    every: int | None
    total: int

    def __contains__(self, step: int) -> bool:
        return step == self.total or (
            bool(self.every) and 0 <= step <= self.total and step % self.every == 0)


def _compiled(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``torch.compile(fn)``, falling back to ``fn`` with a warning where compiling fails."""
    current = [torch.compile(fn)]

    def call(*args: Any) -> torch.Tensor:
        try:
            return current[0](*args)
        except Exception as exc:
            if current[0] is fn:
                raise
            warnings.warn(f"torch.compile failed ({type(exc).__name__}); running eagerly",
                          stacklevel=2)
            current[0] = fn
            return fn(*args)

    return call


def _same_weights(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


class _ArmRun:
    """One arm with its optimizer, learning-rate schedule and metrics."""

    def __init__(self, name: str, record: dict[str, Any], spec: ArmSpec, reg: Registry,
                 trial_seed: int, device: torch.device, data: Data, total: int) -> None:
        self.name, self.record, self.train_spec = name, record, spec.train
        self.replicate = spec.replicate

        def build(kind: str, key: str, comp: Component, ctx: BuildContext) -> Any:
            ctx.seed = stream_seed(trial_seed, replicate_stream(f"init/{key}", self.replicate))
            with global_rng(ctx.seed):
                return reg.create(kind, comp, ctx)

        ctx = BuildContext(seed=0, device=device, data=data, spec=record, trial_seed=trial_seed,
                           registry=reg)
        backbone = build("backbones", "backbone", spec.backbone, ctx)
        ctx.feature_dim = backbone.feature_dim
        head = build("heads", "head", spec.head, ctx)
        ctx.embed_dim = getattr(head, "out_dim", ctx.feature_dim)
        objective = build("objectives", "objective", spec.objective, ctx)
        self.arm = Arm(backbone, head, objective).to(device)
        train = spec.train
        if train.channels_last:
            self.arm.to(memory_format=torch.channels_last)
        self.autocast = train.precision == "bf16"
        self.tf32 = train.precision == "tf32"
        self.device_type = device.type
        self.loss_fn = _compiled(self._loss) if train.compile else self._loss
        if spec.init is not None:
            init = build("inits", "init", spec.init, ctx)
            with global_rng(ctx.seed):
                init(self.arm, data)
        objective.setup(self.arm)
        ctx.model = self.arm
        self.optimizer = build("optimizers", "optimizer", spec.optimizer, ctx)
        for group in self.optimizer.param_groups:
            group["lr"] = scaled_lr(group["lr"], train, data.batch_size)
        self.base_lrs = [g["lr"] for g in self.optimizer.param_groups]
        self.metrics: list[tuple[str, Metric, Schedule]] = []
        for comp in spec.metrics:
            ctx.seed = stream_seed(trial_seed, metric_stream(comp.id))
            with global_rng(ctx.seed):
                metric = reg.create("metrics", comp, ctx)
            self.metrics.append((comp.id, metric, Schedule(metric.every, total)))
        self.observers = [metric for _, metric, _ in self.metrics
                          if type(metric).observe is not Metric.observe]
        self.lrs: list[float] = []

    def _loss(self, batch, views) -> torch.Tensor:
        return self.arm.objective(self.arm, batch, views)

    def step(self, batch, views, step: int, total: int) -> torch.Tensor:
        factor = lr_factor(step, total, self.train_spec)
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * factor
        self.lrs.append(self.base_lrs[0] * factor)
        self.arm.train()
        self.optimizer.zero_grad(set_to_none=True)
        with fp32_matmuls("tf32") if self.tf32 else nullcontext():  # fp32: torch's defaults
            with phase("forward"), torch.autocast(self.device_type, dtype=torch.bfloat16,
                                                  enabled=self.autocast):
                loss = self.loss_fn(batch, views)
            with phase("backward"):
                loss.backward()
        with phase("optimizer"):
            clip = self.train_spec.clip_grad
            if clip is not None:
                nn.utils.clip_grad_norm_(self.arm.parameters(), clip)
            self.optimizer.step()
            self.arm.objective.after_step(self.arm, step, total)
        if self.observers:
            event = StepEvent(step, total, self.name, self.arm, batch, views, self.lrs[-1],
                              self.optimizer)
            with phase("observe"):
                for metric in self.observers:
                    metric.observe(event)
        return loss.detach()


def run_cell(cell: Cell, reg: Registry | None = None, progress: Progress | None = None,
             loggers: tuple[Component, ...] = (), log_dir: str | Path = "logs") -> CellResult:
    """Train every arm of ``cell`` in lockstep; never raises (failures become the status).
    ``loggers`` receive the series as they grow, in the cell's folder under ``log_dir``."""
    result = CellResult(cell.id, Status.COMPLETE)
    logs: CellLogs | None = None
    ended = "interrupted"  # what the loggers hear if the run stops inside the cell
    try:
        try:
            reg = reg or default_registry()
            logs = CellLogs(reg, loggers, log_dir, cell) if loggers else None
            result.started = time.time()  # the loggers' start is not the cell's time
            _train(cell, reg, progress, result, logs)
        except Exception as exc:  # a failing cell is recorded and the grid goes on
            result.status = Status.FAILED
            result.error = describe_failure(exc)
            result.traceback = traceback.format_exc()
        result.finished = time.time()
        result.started = result.started or result.finished
        if logs is not None:
            logs.send(result.series)
        ended = result.status.value
    finally:
        if logs is not None:
            logs.close(ended)
    return result


def _train(cell: Cell, reg: Registry, progress: Progress | None, result: CellResult,
           logs: CellLogs | None) -> None:
    trial, began = cell.trial_seed, time.perf_counter()
    if list(cell.specs) != list(cell.arms):
        raise ValueError(f"cell {cell.id} has no typed spec for each arm: build cells with "
                         "geobench.suite.expand")
    first, spec = next(iter(cell.arms.values())), next(iter(cell.specs.values()))
    device = resolve_device(spec.train.device)
    result.device = str(device)
    data_seed = stream_seed(trial, DATA)
    with global_rng(data_seed):
        data = reg.create("datasets", spec.data, BuildContext(
            data_seed, torch.device("cpu"), spec=first, trial_seed=trial, registry=reg)).to(device)
    augment = reg.create("augmentations", spec.augment, BuildContext(
        stream_seed(trial, "augment"), device, data, spec=first, trial_seed=trial, registry=reg))
    total = total_steps(spec.train, data)
    runs = [_ArmRun(name, cell.arms[name], arm_spec, reg, trial, device, data, total)
            for name, arm_spec in cell.specs.items()]
    result.timing.start = time.perf_counter() - began
    began = time.perf_counter()
    try:
        _loop(cell, spec, runs, data, augment, total, reg, progress, result, logs)
    finally:
        _synchronize(device)
        result.timing.loop = time.perf_counter() - began


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a clock reading covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _loop(cell: Cell, spec: ArmSpec, runs: list[_ArmRun], data: Data, augment: Augmentation,
          total: int, reg: Registry, progress: Progress | None, result: CellResult,
          logs: CellLogs | None) -> None:
    """The lockstep training loop: views, metrics when due, every arm's step, the guard."""
    trial = cell.trial_seed
    _check_lockstep(runs)
    n_views = max(type(r.arm.objective).n_views for r in runs)
    channels_last = spec.train.channels_last
    loop = _Loop(runs, data, augment, trial, total, reg, result, progress,
                 DivergenceGuard(spec.train.max_loss_ratio), log_every=max(1, total // 200))
    pending: list[torch.Tensor] = []
    digest = []
    replicates = sorted({r.replicate for r in runs})
    orders = [in_phase("data", batches(data, stream_seed(trial, replicate_stream(ORDER, k)),
                                        total + 1)) for k in replicates]
    torch.manual_seed(stream_seed(trial, TRAIN))
    train_rngs = {k: SavedRng(stream_seed(trial, replicate_stream(TRAIN, k)))
                  for k in replicates if k}
    for step_batches in zip(*orders):
        step = step_batches[0].step
        inputs: Inputs = {}
        for k, batch in zip(replicates, step_batches):
            view_gen = generator(trial, replicate_stream(augment_stream(step), k))
            with phase("augment"):
                views = [augment(batch.x, batch.index, view_gen, view=v)
                         for v in range(n_views)]
                if channels_last:
                    views = [v.contiguous(memory_format=torch.channels_last) if v.dim() == 4
                             else v for v in views]
            inputs[k] = (batch, views)
        digest.append(batch_hash(step_batches[0]))
        with phase("metrics"):
            _run_metrics(loop, step, inputs)
        if step == total:
            break
        result.timing.steps = step + 1
        losses = []
        for r in runs:
            with train_rngs[r.replicate].active() if r.replicate else nullcontext():
                losses.append(r.step(*inputs[r.replicate], step, total))
        pending.append(torch.stack(losses))
        if (step + 1) % CHECK_EVERY == 0 or step + 1 == total:
            with phase("check"):
                stop = _flush_losses(loop, pending, step + 1)
            if stop:
                return
            pending = []
            if logs is not None:
                logs.send(result.series)
    result.batch_digest = batch_hash_of(digest)
    result.finals = finals_of(result.series)


def batch_hash_of(hashes: list[str]) -> str:
    """Digest of the whole batch sequence: equal digests mean identical batches in order."""
    return hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]


def _check_lockstep(runs: list[_ArmRun]) -> None:
    for run in runs[1:]:
        ref = runs[0]
        if run.replicate != ref.replicate:
            continue  # an independent replicate starts from its own weights
        if run.record["backbone"] == ref.record["backbone"]:
            if not _same_weights(run.arm.backbone, ref.arm.backbone):
                raise RuntimeError(f"arms {ref.name!r} and {run.name!r} share a backbone spec "
                                   "but did not start from the same weights")
            if run.record["head"] == ref.record["head"] and not _same_weights(run.arm.head,
                                                                          ref.arm.head):
                raise RuntimeError(f"arms {ref.name!r} and {run.name!r} share a head spec "
                                   "but did not start from the same weights")


@dataclass
class _Loop:
    """What the training loop's helpers share: the cell's arms, data and views, its length,
    the divergence guard, the metrics' history and the result being filled."""

    runs: list[_ArmRun]
    data: Data
    augment: Augmentation
    trial: int
    total: int
    registry: Registry
    result: CellResult
    progress: Progress | None
    guard: DivergenceGuard
    log_every: int
    history: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = field(
        default_factory=dict)


def _flush_losses(loop: _Loop, pending: list[torch.Tensor], upto: int) -> bool:
    """Record the losses of the steps before ``upto``; return True (and mark the cell
    diverged) if the guard finds a step that diverged."""
    runs, result, guard, total = loop.runs, loop.result, loop.guard, loop.total
    losses = torch.stack(pending).cpu()
    start = upto - len(pending)
    problem, bad = None, upto  # bad: the first step whose weights diverged
    for i, row in enumerate(losses.tolist()):
        step = start + i
        for run, value in zip(runs, row):
            problem = guard.loss(run.name, step, value)
            if problem is not None:
                bad = step
                break
            if step % loop.log_every == 0 or step == total - 1:
                result.series.append((run.name, TRAIN_LOSS_KEY, step, value))
        if problem is not None:
            break
    for run in runs:
        problem = problem or guard.parameters(run.name, run.arm, upto - 1)
    if problem is not None:
        result.status = Status.DIVERGED
        result.error = problem
        result.series = [row for row in result.series if row[2] < bad]  # none measured after
        result.finals = finals_of(result.series)
        return True
    if loop.progress is not None:
        loop.progress(upto, total, float(losses[-1].mean()))
    return False


def _run_metrics(loop: _Loop, step: int, inputs: Inputs) -> None:
    """Evaluate the metrics due at ``step``; each instance draws from its own stream
    ``metric/<id>/<step>`` (the same for every arm), and training's RNG is left as it was.
    Every metric sees the suite's first arm as ``reference`` (a cross-arm metric compares
    against it; a per-arm metric may relate to it) and the batch and views of its arm's
    replicate."""
    runs, trial = loop.runs, loop.trial
    due = [(run, mid, metric) for run in runs for mid, metric, steps in run.metrics
           if step in steps]
    reference = runs[0]
    for run, mid, metric in due:
        if metric.cross_arm and run is not reference:
            continue
        pairs = [(r, reference) for r in runs[1:]] if metric.cross_arm else [(run, None)]
        seed = stream_seed(trial, metric_stream(mid, step))
        for arm_run, ref in pairs:
            label = cross_arm(reference.name, arm_run.name) if ref is not None else arm_run.name
            hist = loop.history.setdefault((label, mid), {})
            batch, views = inputs[arm_run.replicate]
            ctx = MetricContext(
                step=step, total_steps=loop.total, arm_name=arm_run.name, arm=arm_run.arm,
                data=loop.data, batch=batch, views=views, augmentation=loop.augment,
                generator=torch.Generator().manual_seed(seed), spec=arm_run.record,
                seed=stream_seed(trial, metric_stream(mid)), reference_name=reference.name,
                reference=reference.arm, history=hist, lrs=list(arm_run.lrs),
                optimizer=arm_run.optimizer, registry=loop.registry)
            modes = [(m, m.training) for m in (arm_run.arm, reference.arm)]
            for module, _ in modes:
                module.eval()
            device = next(arm_run.arm.parameters()).device
            _synchronize(device)
            began = time.perf_counter()
            try:
                with global_rng(seed), fp32_matmuls("ieee"):
                    values = metric(ctx)
            finally:
                for module, was in modes:
                    module.train(was)
            values = {fld: float(value) for fld, value in values.items()}
            _synchronize(device)
            loop.result.timing.add_metric(mid, time.perf_counter() - began)
            for fld, value in values.items():
                hist.setdefault(fld, []).append((step, value))
                loop.result.series.append((label, f"{mid}.{fld}", step, value))

