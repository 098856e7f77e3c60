"""Training loop: one or more arms in lockstep, metric callbacks on their schedules.

The pieces live beside it: one arm's build and step in ``geobench.train.arm_run``, the
metrics and training losses recorded at a step in ``geobench.train.recording``, the
learning-rate and metric schedules in ``geobench.train.schedules``.

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
import time
import traceback
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn

from geobench.contract.interfaces import Augmentation, BuildContext, Data
from geobench.contract.manager import registry as default_registry
from geobench.contract.raised import failure_line
from geobench.contract.registry import Registry
from geobench.contract.spec import ArmSpec, Component
from geobench.records import ArmStatus, Cell, CellResult, MetricFailure, Status, finals_of
from geobench.train.arm_run import ArmRun
from geobench.train.device import resolve_device, synchronize
from geobench.train.divergence import DivergenceGuard
from geobench.train.loader import batch_hash, batches
from geobench.train.logs import CellLogs
from geobench.train.memory import peak_mb, reset_peak
from geobench.train.phases import in_phase, phase
from geobench.train.recording import Inputs, LoopState, Progress, flush_losses, run_metrics
from geobench.train.schedules import total_steps
from geobench.train.streams import (
    DATA,
    ORDER,
    TRAIN,
    SavedRng,
    augment_stream,
    generator,
    global_rng,
    replicate_stream,
    stream_seed,
)

CHECK_EVERY = 10  # steps between divergence checks (each syncs the device), and before metrics


def run_cell(cell: Cell, reg: Registry | None = None, progress: Progress | None = None,
             loggers: tuple[Component, ...] = (), log_dir: str | Path = "logs") -> CellResult:
    """Train every arm of ``cell`` in lockstep; never raises (failures become the status,
    their one-line error naming the plugin and file:line that raised). A metric that raises
    fails only that arm's metric (``CellResult.metric_failures``). ``loggers`` receive the
    series as they grow, in the cell's folder under ``log_dir``."""
    result = CellResult(cell.id, Status.COMPLETE)
    logs: CellLogs | None = None
    ended = "interrupted"  # what the loggers hear if the run stops inside the cell
    measured = reset_peak()
    try:
        try:
            reg = reg or default_registry()
            logs = CellLogs(reg, loggers, log_dir, cell) if loggers else None
            result.started = time.time()  # the loggers' start is not the cell's time
            _train(cell, reg, progress, result, logs)
        except Exception as exc:  # a failing cell is recorded and the grid goes on
            result.status = Status.FAILED
            result.error = failure_line(exc, reg)
            result.traceback = traceback.format_exc()
        result.finished = time.time()
        result.started = result.started or result.finished
        peak = peak_mb() if measured else None
        result.peak_mb = None if peak is None else round(peak, 1)
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
    result.device, result.threads = str(device), torch.get_num_threads()
    data_seed = stream_seed(trial, DATA)
    with global_rng(data_seed):
        data = reg.create("datasets", spec.data, BuildContext(
            data_seed, torch.device("cpu"), spec=first, trial_seed=trial, registry=reg)).to(device)
    augment = reg.create("augmentations", spec.augment, BuildContext(
        stream_seed(trial, "augment"), device, data, spec=first, trial_seed=trial, registry=reg))
    total = total_steps(spec.train, data)
    runs = [ArmRun(name, cell.arms[name], arm_spec, reg, trial, device, data, total)
            for name, arm_spec in cell.specs.items()]
    result.timing.start = time.perf_counter() - began
    began = time.perf_counter()
    try:
        _loop(cell, spec, runs, data, augment, total, reg, progress, result, logs)
    finally:
        synchronize(device)
        result.timing.loop = time.perf_counter() - began


def _loop(cell: Cell, spec: ArmSpec, runs: list[ArmRun], data: Data, augment: Augmentation,
          total: int, reg: Registry, progress: Progress | None, result: CellResult,
          logs: CellLogs | None) -> None:
    """The lockstep training loop: views, metrics when due, each arm's step, the guard; an
    arm the guard finds diverged stops there and the others train on."""
    trial = cell.trial_seed
    _check_lockstep(runs)
    n_views = max(type(r.arm.objective).n_views for r in runs)
    channels_last = spec.train.channels_last
    loop = LoopState(runs, list(runs), data, augment, trial, total, reg, result, progress,
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
        if pending and any(step in steps for r in loop.active for _, _, steps in r.metrics):
            pending = _check(loop, pending, step, logs)  # no metric reads an unchecked arm
            if not loop.active:
                break
        with phase("metrics"):
            run_metrics(loop, step, inputs)
        if step == total:
            break
        result.timing.steps = step + 1
        losses = []
        for r in loop.active:
            with train_rngs[r.replicate].active() if r.replicate else nullcontext():
                losses.append(r.step(*inputs[r.replicate], step, total))
        pending.append(torch.stack(losses))
        if (step + 1) % CHECK_EVERY == 0 or step + 1 == total:
            pending = _check(loop, pending, step + 1, logs)
            if not loop.active:
                break
    _settle(result, [r.name for r in runs], [f for r in runs for f in r.failures.values()])
    if loop.active:
        result.batch_digest = batch_hash_of(digest)


def _check(loop: LoopState, pending: list[torch.Tensor], upto: int,
           logs: CellLogs | None) -> list[torch.Tensor]:
    """The guard over the steps before ``upto``; the loggers get what was recorded and the
    arms that ended. Returns the emptied list of pending losses."""
    with phase("check"):
        ended = flush_losses(loop, pending, upto)
    if logs is not None:
        logs.send(loop.result.series)
        for name in ended:
            logs.end_arm(name, loop.result.arms[name])
    return []


def _settle(result: CellResult, arms: list[str], failures: list[MetricFailure]) -> None:
    """Every arm's status (complete unless it diverged) and the cell's: diverged, with the
    first arm's reason, when every arm diverged; the metrics that failed on an arm, with no
    value of theirs kept there; the finals of what each arm kept."""
    failed = {(f.arm, f.metric) for f in failures}
    result.metric_failures = sorted(failures, key=lambda f: (f.step, f.arm, f.metric))
    result.series = [row for row in result.series
                     if (_owner(row[0]), row[1].partition(".")[0]) not in failed
                     and (row[0], row[1].partition(".")[0]) not in failed]
    result.arms = {name: result.arms.get(name, ArmStatus(Status.COMPLETE.value))
                   for name in arms}
    if all(a.status == Status.DIVERGED for a in result.arms.values()):
        result.status = Status.DIVERGED
        result.error = min(result.arms.values(), key=lambda a: a.step).error
    result.finals = finals_of(result.series)


def _owner(label: str) -> str:
    """The arm whose metric instance measures ``label`` (``ref~arm``: ``ref``'s)."""
    return label.partition("~")[0]


def batch_hash_of(hashes: list[str]) -> str:
    """Digest of the whole batch sequence: equal digests mean identical batches in order."""
    return hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]


def _check_lockstep(runs: list[ArmRun]) -> None:
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


def _same_weights(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
