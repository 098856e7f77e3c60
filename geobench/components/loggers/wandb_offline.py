"""Weights & Biases logger, offline: each cell a run under ``<run folder>/wandb``, synced
later (if at all) with ``wandb sync``; no network and no login."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from geobench.contract.interfaces import Logger, LogRun, Params
from geobench.records import Status

STEP = "step"  # the x-axis every tag is plotted against


class WandbParams(Params):
    project: str = Field("geobench", min_length=1, description="W&B project of the runs")


class WandbLogger(Logger):
    """A run per cell (name: its varied keys, group: the suite, job type: the profile,
    config: its resolved config); every tag is logged against the training ``step``; an arm
    that diverges while the others train on gets the summary entry ``<arm>/status``."""

    def __init__(self, params: WandbParams) -> None:
        import wandb  # needs the wandb package

        self.params, self.wandb = params, wandb
        self.run: Any = None

    def start(self, run: LogRun) -> None:
        run.folder.mkdir(parents=True, exist_ok=True)
        settings = self.wandb.Settings(silent=True, console="off", x_disable_stats=True)
        self.run = self.wandb.init(mode="offline", dir=str(run.folder), project=self.params.project,
                                   name=run.name, group=run.suite, job_type=run.profile,
                                   config=run.config, reinit="create_new", settings=settings)
        try:
            self.run.define_metric(STEP)
            self.run.define_metric("*", step_metric=STEP)
        except BaseException:
            self.run.finish(exit_code=1)
            raise

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self.run.log({STEP: step, **scalars})

    def arm_diverged(self, arm: str, step: int, reason: str) -> None:
        self.run.summary[f"{arm}/status"] = f"diverged at step {step}: {reason}"

    def finish(self, status: str) -> None:
        self.run.finish(exit_code=0 if status == Status.COMPLETE.value else 1)


def build_wandb(params: WandbParams, ctx: Any) -> WandbLogger:
    try:
        return WandbLogger(params)
    except ImportError:
        raise ImportError("the wandb logger needs the wandb package: "
                          "pip install 'geobench[wandb]'") from None
