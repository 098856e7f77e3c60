"""Cell functions for the pool executor's tests: module level, so spawned workers import them."""

import os
import signal
import time

import torch

KILL, EXIT, RAISE = 3, 5, 7  # items on which ``double_or_die`` kills, exits or raises

DIE_AT_LR = """
import os
import signal

from geobench.contract.hooks import hookimpl
from geobench.contract.param_models import Params


class DieParams(Params):
    lr: float = 0.2


def build(params, ctx):
    if ctx.spec["optimizer"]["lr"] == params.lr:
        os.kill(os.getpid(), signal.SIGKILL)
    from geobench_toy import build_toy_ce  # the toy plugin, installed beside this one

    return build_toy_ce(params, ctx)


@hookimpl
def register_objectives(register):
    register("ce_or_die", build, params=DieParams,
             doc="cross-entropy; SIGKILLs its own process when the optimizer's lr is `lr`")
"""  # a plugin: objective ``ce_or_die`` kills the worker of the cell with lr 0.2 (needs the toy)


def double_or_die(x: int) -> int:
    """``2 x``; on KILL the process SIGKILLs itself, on EXIT it calls ``os._exit(3)``."""
    if x == KILL:
        os.kill(os.getpid(), signal.SIGKILL)
    if x == EXIT:
        os._exit(3)
    if x == RAISE:
        raise ValueError(f"bad item {x}")
    return 2 * x


def threads_and_pid(x: int) -> tuple[int, int]:
    """The worker's torch threads and process id, after ``x`` tenths of a second."""
    time.sleep(x / 10)
    return torch.get_num_threads(), os.getpid()


def kill_self(item: object) -> None:
    """SIGKILL the process running ``item``."""
    os.kill(os.getpid(), signal.SIGKILL)
