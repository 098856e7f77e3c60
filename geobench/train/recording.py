"""Filling a cell's result during the lockstep loop: the metrics due at a step, and the
training losses read back through the divergence guard; with the state the loop shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from geobench.contract.interfaces import Augmentation, Batch, Data, MetricContext
from geobench.contract.registry import Registry
from geobench.records import TRAIN_LOSS_KEY, ArmStatus, CellResult, Status, cross_arm
from geobench.train import precision
from geobench.train.arm_run import ArmRun
from geobench.train.device import synchronize
from geobench.train.divergence import DivergenceGuard
from geobench.train.streams import global_rng, metric_stream, stream_seed

Progress = Callable[[int, int, float], None]
Inputs = dict[int, tuple[Batch, list[torch.Tensor]]]  # replicate -> (batch, views) of a step


@dataclass
class LoopState:
    """What the training loop's helpers share: the cell's arms (and those still training),
    data and views, its length, the divergence guard, the metrics' history and the result
    being filled."""

    runs: list[ArmRun]
    active: list[ArmRun]  # the arms not diverged, which train on
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


def flush_losses(loop: LoopState, pending: list[torch.Tensor], upto: int) -> list[str]:
    """Record the losses of the steps before ``upto`` (one column per arm of ``loop.active``)
    and end each arm the guard finds diverged; return the names of those arms."""
    result, guard, total = loop.result, loop.guard, loop.total
    losses = torch.stack(pending).cpu()
    start = upto - len(pending)
    bad: dict[str, tuple[int, str]] = {}  # arm -> (first step it does not keep, why)
    for i, row in enumerate(losses.tolist()):
        step = start + i
        for run, value in zip(loop.active, row):
            if run.name in bad:
                continue
            problem = guard.loss(run.name, step, value)
            if problem is not None:
                bad[run.name] = (step, problem)
            elif step % loop.log_every == 0 or step == total - 1:
                result.series.append((run.name, TRAIN_LOSS_KEY, step, value))
    for run in loop.active:
        problem = None if run.name in bad else guard.state(run.name, run.arm, upto - 1)
        if problem is not None:
            bad[run.name] = (upto, problem)
    for name, (step, problem) in bad.items():
        result.arms[name] = ArmStatus(Status.DIVERGED.value, step, problem)
        # nothing of the arm (or of a pair with it) measured from that step on
        result.series = [row for row in result.series
                         if row[2] < step or name not in row[0].split("~")]
    kept = [i for i, run in enumerate(loop.active) if run.name not in bad]
    loop.active = [loop.active[i] for i in kept]
    if loop.progress is not None and kept:
        loop.progress(upto, total, float(losses[-1, kept].mean()))
    return list(bad)


def run_metrics(loop: LoopState, step: int, inputs: Inputs) -> None:
    """Evaluate the metrics due at ``step``; each instance draws from its own stream
    ``metric/<id>/<step>`` (the same for every arm), and training's RNG is left as it was.
    Every metric sees the suite's first arm as ``reference`` (a cross-arm metric compares
    against it; a per-arm metric may relate to it) and the batch and views of its arm's
    replicate. A diverged arm is measured no more; once the first arm has diverged, the
    cross-arm metrics stop and the per-arm ones see no reference (``ctx.reference`` None).
    A metric that raises on an arm (or arm pair) is recorded as failed there
    (``ArmRun.fail_metric``) and measured there no more; the others go on."""
    trial, active = loop.trial, loop.active
    due = [(run, mid, metric) for run in active for mid, metric, steps in run.metrics
           if step in steps]
    reference = loop.runs[0]
    for run, mid, metric in due:
        if (metric.cross_arm and run is not reference) or (run.name, mid) in run.failures:
            continue
        pairs = [(r, reference) for r in active[1:]] if metric.cross_arm else [(run, None)]
        seed = stream_seed(trial, metric_stream(mid, step))
        for arm_run, ref in pairs:
            label = cross_arm(reference.name, arm_run.name) if ref is not None else arm_run.name
            if (label, mid) in run.failures:
                continue
            hist = loop.history.setdefault((label, mid), {})
            batch, views = inputs[arm_run.replicate]
            ctx = MetricContext(
                step=step, total_steps=loop.total, arm_name=arm_run.name, arm=arm_run.arm,
                data=loop.data, batch=batch, views=views, augmentation=loop.augment,
                generator=torch.Generator().manual_seed(seed), spec=arm_run.record,
                seed=stream_seed(trial, metric_stream(mid)), history=hist,
                lrs=list(arm_run.lrs), optimizer=arm_run.optimizer, registry=loop.registry)
            if reference is active[0]:
                ctx.reference_name, ctx.reference = reference.name, reference.arm
            modes = [(m, m.training) for m in (arm_run.arm, reference.arm)]
            for module, _ in modes:
                module.eval()
            device = next(arm_run.arm.parameters()).device
            synchronize(device)
            began = time.perf_counter()
            try:
                with global_rng(seed), precision.fp32_matmuls("ieee"):
                    values = {fld: float(value) for fld, value in metric(ctx).items()}
            except Exception as exc:  # the arm's metric fails, not the cell
                run.fail_metric(label, mid, step, exc)
                continue
            finally:
                for module, was in modes:
                    module.train(was)
            synchronize(device)
            loop.result.timing.add_metric(mid, time.perf_counter() - began)
            for fld, value in values.items():
                hist.setdefault(fld, []).append((step, value))
                loop.result.series.append((label, f"{mid}.{fld}", step, value))

