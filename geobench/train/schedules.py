"""Schedules of a training run: its length in steps, the learning rate's batch-size scaling
and per-step factor, and the steps at which a metric runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from geobench.contract.interfaces import Data
from geobench.contract.spec import TrainSpec
from geobench.train.loader import steps_per_epoch


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
