"""The records every layer shares: a cell's identity, its result, its status and the key of
each measured value. Nothing here imports torch, the engine or the store.

Result keys have one format, built and parsed only here: ``<arm>/<metric id>.<field>``,
with no arm prefix in a single-arm suite (arm ``main``) and ``<reference>~<arm>`` as the arm
of a cross-arm metric (measured on ``arm`` against the suite's first arm).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from geobench.contract.spec import ArmSpec

SINGLE_ARM = "main"
TRAIN_LOSS_KEY = "loss.train"


class Status(str, Enum):
    """How a cell ended: ``complete``, ``diverged`` (a scientific outcome: the loss blew up)
    or ``failed`` (an error; a rerun retries it). ``missing``: not in the store."""

    COMPLETE = "complete"
    DIVERGED = "diverged"
    FAILED = "failed"
    MISSING = "missing"

    def __str__(self) -> str:
        return self.value


DONE = (Status.COMPLETE.value, Status.DIVERGED.value)  # statuses a rerun skips


@dataclass(frozen=True)
class ArmStatus:
    """How one arm of a cell ended: ``complete``, ``diverged`` at ``step`` (the first step
    whose values it does not keep) with ``error`` saying why, or ``failed`` with its cell."""

    status: str  # a Status value
    step: int | None = None
    error: str | None = None


def label_status(statuses: dict[str, str], label: str) -> str:
    """The status of the values under arm ``label`` (``ref~arm``: both arms' statuses), given
    each arm's status: failed or missing before diverged, diverged before complete."""
    parts = [statuses.get(arm, Status.MISSING.value) for arm in label.split("~")]
    for status in (Status.FAILED, Status.MISSING, Status.DIVERGED):
        if status.value in parts:
            return status.value
    return Status.COMPLETE.value


class MetricKey(NamedTuple):
    """One measured value's address: arm (``main`` in a single-arm suite), metric id, field."""

    arm: str
    metric: str
    field: str

    @property
    def series(self) -> str:
        """``<metric id>.<field>``: the series' name within its arm."""
        return f"{self.metric}.{self.field}"

    def __str__(self) -> str:
        return metric_key(self.arm, self.series)


def metric_key(arm: str, series: str) -> str:
    """The result key of ``series`` (``<metric id>.<field>``) measured on ``arm``."""
    return series if arm == SINGLE_ARM else f"{arm}/{series}"


def parse_metric_key(key: str) -> MetricKey:
    """``[<arm>/]<metric id>.<field>`` -> MetricKey (arm ``main`` when the key has none)."""
    arm, _, series = key.rpartition("/")
    metric, _, fld = series.partition(".")
    return MetricKey(arm or SINGLE_ARM, metric, fld)


def cross_arm(reference: str, arm: str) -> str:
    """The arm label of a cross-arm metric measured on ``arm`` against ``reference``."""
    return f"{reference}~{arm}"


def measured_arm(label: str) -> str:
    """The arm a (possibly cross-arm) label measures: ``ref~arm`` -> ``arm``."""
    return label.rpartition("~")[2]


@dataclass(frozen=True)
class Cell:
    """One run of a suite: every arm's resolved spec, its trial seed and its id.

    ``arms`` is the record (JSON: stored, hashed, read by leaderboards); ``specs`` holds the
    same arms as validated, typed components, which the engine builds from. The id (a hash
    of the resolved config and versions) is the resume key only; every random draw derives
    from ``trial_seed`` through named streams (``geobench.train.streams``).
    """

    id: str
    suite: str
    profile: str
    trial_seed: int
    arms: dict[str, dict[str, Any]]
    varied: dict[str, Any]
    versions: dict[str, str] = field(default_factory=dict)
    specs: dict[str, ArmSpec] = field(default_factory=dict, compare=False, repr=False)

    def label(self, width: int = 48) -> str:
        """The varied keys, ``key=value`` joined by ``, `` (``base`` for none): keys as
        ``_short_keys`` names them (``lr=0.1``, ``gd.lr=0.5``), a list of components by their
        names (``metrics=[collapse, escape_step]``), a component by its name; a value longer
        than ``width`` characters is cut, ending in ``…``."""
        names = _short_keys(list(self.varied))
        return ", ".join(f"{n}={_short(v, width)}" for n, v in zip(names, self.varied.values())
                         ) or "base"

    def config(self) -> dict[str, Any]:
        return {"suite": self.suite, "profile": self.profile, "trial_seed": self.trial_seed,
                "arms": self.arms, "varied": self.varied, "versions": self.versions}


def _short_keys(keys: list[str]) -> list[str]:
    """Each dotted key by its last part; where other keys end the same way, with the parts
    no other of those keys has (``arms.gd.optimizer.lr`` beside ``arms.sgd.optimizer.lr``:
    ``gd.lr``); the whole key where that still collides."""
    tails = [k.rsplit(".", 1)[-1] for k in keys]
    names = []
    for key, tail in zip(keys, tails):
        group = Counter(p for k, t in zip(keys, tails) if t == tail
                        for p in set(k.split(".")[:-1]))
        own = [p for p in key.split(".")[:-1] if group[p] == 1] if tails.count(tail) > 1 else []
        names.append(".".join(own + [tail]))
    return [n if names.count(n) == 1 else k for k, n in zip(keys, names)]


def _short(value: Any, width: int) -> str:
    """A varied value as ``Cell.label`` shows it."""
    if isinstance(value, dict) and "name" in value:
        text = str(value["name"])
    elif isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v
                                                   for v in value):
        text = "[" + ", ".join(str(v["name"]) for v in value) + "]"
    else:
        text = str(value)
    return text if len(text) <= width else text[:width - 1] + "…"


@dataclass
class Timing:
    """Where a cell's wall time went (seconds; stored in its provenance, never part of its
    results): building data, augmentation and arms (``start``), the training loop with its
    metrics (``loop``, over ``steps`` steps of every arm) and each metric by its id
    (``metric``, over ``calls`` calls, one per arm or arm pair)."""

    start: float = 0.0
    loop: float = 0.0
    steps: int = 0
    metric: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def step_seconds(self) -> float | None:
        """Seconds per lockstep step of the loop without its metrics (None: no step)."""
        return (self.loop - sum(self.metric.values())) / self.steps if self.steps else None

    def add_metric(self, name: str, seconds: float) -> None:
        self.metric[name] = self.metric.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + 1


@dataclass(frozen=True)
class MetricFailure:
    """A metric that raised on one arm (the label ``ref~arm`` for a cross-arm metric) at
    ``step``: the one-line ``error`` (what was raised, by which plugin, at which file:line)
    and the ``traceback``. That arm's values of the metric are left out; the cell, its other
    arms and its other metrics go on."""

    arm: str
    metric: str  # the metric's id
    step: int
    error: str
    traceback: str = ""

    def __str__(self) -> str:
        return f"metric {self.metric} failed on arm {self.arm} at step {self.step}: {self.error}"


DEFAULT_THREADS = 1  # torch threads per cell unless a run sets others: the published setting
DEFAULT_STORE = "results/geobench.sqlite"  # every command's --store default


@dataclass
class CellResult:
    """What running a cell produced: its status, each arm's (``arms``; the cell is
    ``complete`` while one arm ran to the end, ``diverged`` when every arm diverged), the
    series ``(arm, series, step, value)`` and the last value of each series under its result
    key (``finals``); ``claims``: the digest of every claim definition of the suite the cell
    ran under (None: not recorded); ``registration``: the sha256 of its profile's
    registration in force (``geobench.study.registered``; None: none); ``peak_mb``: the
    peak resident memory of the process while it ran the cell (``geobench.train.memory``);
    ``metric_failures``: the metrics that raised on an arm of a cell that went on
    (``MetricFailure``)."""

    cell_id: str
    status: str  # a Status value
    error: str | None = None
    traceback: str | None = None
    series: list[tuple[str, str, int, float]] = field(default_factory=list)
    finals: dict[str, float] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0
    device: str = "cpu"
    threads: int = 0  # torch's intra-op threads while the cell ran
    batch_digest: str = ""
    claims: dict[str, str] | None = None  # claim id -> digest of its definition, in force
    registration: str | None = None  # sha256 of the registration in force
    arms: dict[str, ArmStatus] = field(default_factory=dict)
    peak_mb: float | None = field(default=None, compare=False)  # resident memory, MiB
    timing: Timing = field(default_factory=Timing, compare=False)
    metric_failures: list[MetricFailure] = field(default_factory=list)


def finals_of(series: list[tuple[str, str, int, float]]) -> dict[str, float]:
    """Last value of each series, keyed by its result key."""
    last: dict[str, tuple[int, float]] = {}
    for arm, name, step, value in series:
        key = metric_key(arm, name)
        if key not in last or step >= last[key][0]:
            last[key] = (step, value)
    return {key: value for key, (_, value) in last.items()}


ORIGIN = re.compile(r"(.+) \((.+)\)")  # a plugin's origin: ``name (distribution)``


def plugins(versions: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The plugins of the cells' stored versions (each cell's: origin ``name (distribution)``
    -> version, ``geobench`` -> the core's version, nested components' plugins included),
    each once: its name, distribution and every version a cell recorded."""
    found: dict[str, set[str]] = {}
    for cell in versions:
        for origin, version in cell.items():
            if origin != "geobench":
                found.setdefault(origin, set()).add(version)
    made = []
    for origin, seen in sorted(found.items()):
        named = ORIGIN.fullmatch(origin)
        name, dist = named.groups() if named else (origin, "?")
        made.append({"name": name, "distribution": dist, "versions": sorted(seen)})
    return made


def plugins_text(plugins: list[dict[str, Any]]) -> str:
    """The plugins as a page names them: ``core (geobench) 0.1.0, toy (geobench-toy) 0.1``."""
    return ", ".join(f"{p['name']} ({p['distribution']}) {', '.join(p['versions'])}"
                     for p in plugins)


def utc_iso(t: float) -> str:
    """Seconds since the epoch as UTC ISO 8601 to the second: ``2026-12-07T13:05:00+00:00``."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")
