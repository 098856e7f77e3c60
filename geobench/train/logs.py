"""Experiment trackers (the ``loggers`` component kind).

A run selects loggers with ``--logger NAME`` or a suite's ``loggers:`` list. Each cell
gets its own run folder, ``<log dir>/<suite>[_<profile>]/<varied keys>-<cell id>``;
``CellLogs`` hands the cell's new series rows to every logger after each divergence check (every
``geobench.train.engine.CHECK_EVERY`` steps) and at the end, as scalars tagged
``<arm>/<metric id>.<field>``. A logger that raises is switched off for the rest of the
cell (told to finish, so that it closes its files), with one line on stderr per logger, run
and process; the cell goes on.
"""

from __future__ import annotations

import re
import sys
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from geobench.contract.interfaces import BuildContext, Logger, LogRun
from geobench.contract.manager import describe_failure
from geobench.contract.registry import Registry, RegistryError, ValidationError
from geobench.contract.spec import Component
from geobench.records import ArmStatus, Cell, Status

WARNED: set[str] = set()  # loggers that have warned in this run and process
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=+-]+")


def run_folder(log_dir: str | Path, cell: Cell) -> Path:
    """``<log_dir>/<suite>[_<profile>]/<varied keys>-<cell id>``, made file-name safe; the
    varied keys are cut to 150 characters, and the cell id keeps every cell's folder its own.
    """
    suite = cell.suite + ("" if cell.profile == "smoke" else f"_{cell.profile}")
    varied = _UNSAFE.sub("_", cell.label().replace(", ", ","))[:150]
    return Path(log_dir) / _UNSAFE.sub("_", suite) / f"{varied}-{cell.id[:8]}"


def _scalar(value: Any) -> float | int | str | bool:
    return value if isinstance(value, (bool, int, float, str)) else str(value)


def log_run(cell: Cell, log_dir: str | Path) -> LogRun:
    hparams = {"suite": cell.suite, "profile": cell.profile,
               **{k: _scalar(v) for k, v in cell.varied.items()}}
    return LogRun(run_folder(log_dir, cell), cell.label(), cell.suite, cell.profile,
                  cell.config(), hparams)


def build_logger(reg: Registry, component: Component) -> Logger:
    """Build one logger; a factory that fails (its package missing) is a ``RegistryError``
    naming the logger."""
    try:
        return reg.create("loggers", component, BuildContext(seed=0, device=torch.device("cpu")))
    except RegistryError:
        raise
    except Exception as exc:
        raise RegistryError(f"logger {component.name!r} cannot be used: "
                            f"{describe_failure(exc)}") from None


def select_loggers(reg: Registry, specs: list[dict[str, Any]], names: list[str]
                   ) -> tuple[Component, ...]:
    """The loggers of a run: the suite's ``specs`` (``{name, **params}``, validated when
    the suite loaded) and ``names`` (``--logger``; one the suite lists keeps its params),
    each built once here so that a missing package stops the run before any cell starts."""
    named = {s["name"]: {k: v for k, v in s.items() if k != "name"} for s in specs}
    for name in names:
        named.setdefault(name, {})
    components = []
    for name, params in named.items():
        try:
            component = Component(name, reg.validate("loggers", {"name": name, **params}))
        except ValidationError as exc:
            raise RegistryError(f"logger {name!r}: {exc.errors()[0]['msg']} (set its params "
                                "in the suite's 'loggers:' list)") from None
        build_logger(reg, component)
        components.append(component)
    return tuple(components)


def prepare_log_dir(log_dir: str | Path) -> str:
    """``log_dir`` as an absolute path, created and checked writable; one that is not is a
    ``RegistryError`` naming it (before any cell starts)."""
    path = Path(log_dir).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise RegistryError(f"log dir {str(path)!r}: cannot write there "
                            f"({exc.strerror or exc}); choose another with --log-dir") from None
    return str(path)


def reset_warnings() -> None:
    """Let every logger warn again (once): called as a run starts."""
    WARNED.clear()


def _warn(name: str, what: str, exc: BaseException) -> None:
    """One line on stderr (above any progress bar), the first time ``name`` fails in this
    run and process."""
    if name not in WARNED:
        WARNED.add(name)
        tqdm.write(f"geobench: logger {name!r} failed to {what} ({describe_failure(exc)}); "
                   "it is off for the rest of the cell, which goes on", file=sys.stderr)


class CellLogs:
    """The loggers of one cell: fed the rows of ``CellResult.series`` they have not seen."""

    def __init__(self, reg: Registry, components: tuple[Component, ...], log_dir: str | Path,
                 cell: Cell) -> None:
        self.active: dict[str, Logger] = {}
        self.sent = 0
        try:
            for component in components:
                self._start(reg, component, cell, log_dir)
        except BaseException:  # stopped while starting: close the loggers already started
            self.close("interrupted")
            raise

    def _start(self, reg: Registry, component: Component, cell: Cell,
               log_dir: str | Path) -> None:
        """Build and start one logger. One that fails to start is still told to finish
        (as ``failed``, best effort) so that it closes its files; a run stopped during its
        start tells it to finish as ``interrupted``."""
        try:
            logger = build_logger(reg, component)
        except Exception as exc:
            _warn(component.name, "start", exc)
            return
        try:
            logger.start(log_run(cell, log_dir))
        except Exception as exc:
            _warn(component.name, "start", exc)
            _finish_quietly(logger, Status.FAILED.value)
            return
        except BaseException:
            _finish_quietly(logger, "interrupted")
            raise
        self.active[component.name] = logger

    def send(self, series: list[tuple[str, str, int, float]]) -> None:
        """Log the rows after the last sent one, step by step (sorted by step)."""
        new, self.sent = series[self.sent:], len(series)
        by_step: dict[int, dict[str, float]] = {}
        for arm, name, step, value in sorted(new, key=lambda row: row[2]):
            by_step.setdefault(step, {})[f"{arm}/{name}"] = value
        for name, logger in list(self.active.items()):
            try:
                for step, scalars in by_step.items():
                    logger.log(step, scalars)
            except Exception as exc:
                self._off(name, "log", exc)

    def end_arm(self, arm: str, status: ArmStatus) -> None:
        """Tell every logger that ``arm`` diverged (at ``status.step``, for ``status.error``)."""
        for name, logger in list(self.active.items()):
            try:
                logger.arm_diverged(arm, status.step or 0, status.error or "")
            except Exception as exc:
                self._off(name, "log", exc)

    def close(self, status: str) -> None:
        for name, logger in list(self.active.items()):
            try:
                logger.finish(status)
            except Exception as exc:
                self._off(name, "finish", exc)
        self.active = {}

    def _off(self, name: str, what: str, exc: BaseException) -> None:
        """Switch off a logger that raised; one that failed to log is still told to finish
        (as ``failed``, best effort) so that it closes its files."""
        logger = self.active.pop(name)
        _warn(name, what, exc)
        if what == "log":
            _finish_quietly(logger, Status.FAILED.value)


def _finish_quietly(logger: Logger, status: str) -> None:
    """``logger.finish(status)``, its errors ignored (it has already failed or is stopped)."""
    with suppress(Exception):
        logger.finish(status)
