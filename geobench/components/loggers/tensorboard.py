"""TensorBoard logger: one event file per cell through ``torch.utils.tensorboard``."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from geobench.contract.interfaces import Logger, LogRun, Params
from geobench.records import Status


class TensorBoardParams(Params):
    flush_secs: float = Field(30.0, gt=0, description="seconds between flushes to disk")


class TensorBoardLogger(Logger):
    """Scalars per tag and step; the cell's hparams (suite, profile, varied keys) as an
    HParams session that starts with the cell and ends with its status (``complete`` is
    success, any other status failure), and its whole resolved config as text (``config``).
    No experiment summary is written, so the HParams dashboard lists every scalar tag as a
    metric. An arm that diverges while the others train on gets the text ``<arm>/status``."""

    def __init__(self, params: TensorBoardParams) -> None:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        self.params, self.writer_class = params, SummaryWriter
        self.writer: Any = None

    def start(self, run: LogRun) -> None:
        from torch.utils.tensorboard.summary import hparams

        self.writer = self.writer_class(log_dir=str(run.folder),
                                        flush_secs=self.params.flush_secs)
        try:
            _, session_start, _ = hparams(run.hparams, {})
            self.writer.file_writer.add_summary(session_start)
            text = json.dumps(run.config, indent=2, default=str)
            self.writer.add_text("config", "    " + text.replace("\n", "\n    "))
        except BaseException:
            self.writer.close()
            raise

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, global_step=step)

    def arm_diverged(self, arm: str, step: int, reason: str) -> None:
        self.writer.add_text(f"{arm}/status", f"diverged at step {step}: {reason}",
                             global_step=step)

    def finish(self, status: str) -> None:
        try:
            self.writer.file_writer.add_summary(_session_end(status == Status.COMPLETE.value))
            self.writer.add_text("status", status)
        finally:
            self.writer.close()


def _session_end(success: bool) -> Any:
    """The HParams session-end summary (what ``torch.utils.tensorboard``'s ``hparams`` writes,
    with the status the cell ended in)."""
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    end = plugin_data_pb2.SessionEndInfo(
        status=api_pb2.STATUS_SUCCESS if success else api_pb2.STATUS_FAILURE)
    content = plugin_data_pb2.HParamsPluginData(session_end_info=end,
                                                version=metadata.PLUGIN_DATA_VERSION)
    plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME,
                                        content=content.SerializeToString())
    return Summary(value=[Summary.Value(tag=metadata.SESSION_END_INFO_TAG,
                                        metadata=SummaryMetadata(plugin_data=plugin))])


def build_tensorboard(params: TensorBoardParams, ctx: Any) -> TensorBoardLogger:
    try:
        return TensorBoardLogger(params)
    except ImportError:
        raise ImportError("the tensorboard logger needs the tensorboard package: "
                          "pip install 'geobench[tensorboard]'") from None
