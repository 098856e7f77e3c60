"""TensorBoard logger: one event file per cell through ``torch.utils.tensorboard``."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from geobench.api import Logger, LogRun, Params


class TensorBoardParams(Params):
    flush_secs: float = Field(30.0, gt=0, description="seconds between flushes to disk")


class TensorBoardLogger(Logger):
    """Scalars per tag and step; the cell's hparams (suite, profile, varied keys) for the
    HParams dashboard and its whole resolved config as text (``config``)."""

    def __init__(self, params: TensorBoardParams) -> None:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        self.params, self.writer_class = params, SummaryWriter
        self.writer: Any = None

    def start(self, run: LogRun) -> None:
        from torch.utils.tensorboard.summary import hparams

        self.writer = self.writer_class(log_dir=str(run.folder),
                                        flush_secs=self.params.flush_secs)
        for summary in hparams(run.hparams, {}):
            self.writer.file_writer.add_summary(summary)
        text = json.dumps(run.config, indent=2, default=str)
        self.writer.add_text("config", "    " + text.replace("\n", "\n    "))

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, global_step=step)

    def finish(self, status: str) -> None:
        self.writer.add_text("status", status)
        self.writer.close()


def build_tensorboard(params: TensorBoardParams, ctx: Any) -> TensorBoardLogger:
    try:
        return TensorBoardLogger(params)
    except ImportError:
        raise ImportError("the tensorboard logger needs the tensorboard package: "
                          "pip install 'geobench[tensorboard]'") from None
