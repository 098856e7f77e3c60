"""One arm of a cell: its components built on their own random streams, its optimizer with
the learning-rate schedule, its metrics, and its training step (with step events to the
metrics that observe it)."""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch
from torch import nn

from geobench.contract.errors import RegistryError
from geobench.contract.interfaces import Arm, BuildContext, Data, Metric, StepEvent
from geobench.contract.raised import failure_line
from geobench.contract.registry import Registry
from geobench.contract.spec import ArmSpec, Component
from geobench.records import MetricFailure
from geobench.train import precision
from geobench.train.phases import phase
from geobench.train.schedules import Schedule, lr_factor, scaled_lr
from geobench.train.streams import global_rng, metric_stream, replicate_stream, stream_seed


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


class ArmRun:
    """One arm with its optimizer, learning-rate schedule and metrics, and the metrics of
    its that failed (``failures``, by arm label and metric id)."""

    def __init__(self, name: str, record: dict[str, Any], spec: ArmSpec, reg: Registry,
                 trial_seed: int, device: torch.device, data: Data, total: int) -> None:
        self.name, self.record, self.train_spec = name, record, spec.train
        self.replicate, self.registry = spec.replicate, reg
        self.failures: dict[tuple[str, str], MetricFailure] = {}

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
        self.metric_names: dict[str, str] = {}
        for comp in spec.metrics:
            ctx.seed = stream_seed(trial_seed, metric_stream(comp.id))
            with global_rng(ctx.seed):
                metric = reg.create("metrics", comp, ctx)
            self.metrics.append((comp.id, metric, Schedule(metric.every, total)))
            self.metric_names[comp.id] = comp.name
        self.observers = [(mid, metric) for mid, metric, _ in self.metrics
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
        # fp32: torch's defaults
        with precision.fp32_matmuls("tf32") if self.tf32 else nullcontext():
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
                for mid, metric in list(self.observers):
                    try:
                        metric.observe(event)
                    except Exception as exc:  # the arm's metric fails, not the cell
                        self.fail_metric(self.name, mid, step, exc)
                        self.observers.remove((mid, metric))
        return loss.detach()

    def fail_metric(self, label: str, mid: str, step: int, exc: Exception) -> None:
        """Record that metric ``mid`` of this arm raised ``exc`` measuring ``label`` (this
        arm, or ``ref~arm`` for a cross-arm metric) at ``step``."""
        try:
            fallback = self.registry.get("metrics", self.metric_names[mid]).origin
        except (KeyError, RegistryError):  # the registry does not know it: no plugin named
            fallback = None
        self.failures[(label, mid)] = MetricFailure(
            label, mid, step, failure_line(exc, self.registry, fallback),
            "".join(traceback.format_exception(exc)))
