"""The typed contract between the core and every plugin.

A plugin registers factories under a component kind (see ``contract.hooks``).  Every factory
is called as ``factory(params, ctx)`` where ``params`` is an instance of the pydantic model
the plugin declared (``Params`` subclasses) and ``ctx`` is the ``BuildContext`` of the run
being built.  What each kind's factory returns:

=============  ==========================================================================
datasets       ``Data`` (tensors in memory, on the CPU)
augmentations  ``Augmentation``: ``aug(x, index, generator) -> x'`` batched on x's device
backbones      ``nn.Module`` with ``feature_dim`` (and ``homogeneity_degree`` if homogeneous)
heads          ``nn.Module`` with ``out_dim``; input dim is ``ctx.feature_dim``
objectives     ``Objective`` (an ``nn.Module``; may own parameters: predictor, classifier)
optimizers     ``torch.optim.Optimizer`` over ``ctx.model`` (the whole ``Arm``)
mirror_maps    ``MirrorMap`` (``contract.mirror_map``): a potential R and its conjugate R*
metrics        ``Metric``
executors      ``Executor`` (a subclass)
inits          ``Init``: ``init(arm, data)`` modifies the freshly built arm in place
loggers        ``Logger``: receives each cell's metric series while it trains
=============  ==========================================================================
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch
from torch import Tensor, nn

from geobench.contract.param_models import (
    DataParams,
    Direction,
    EmptyParams,
    FieldDoc,
    MetricParams,
    Nested,
    Params,
)

if TYPE_CHECKING:
    from geobench.contract.registry import Registry


@dataclass
class Data:
    """A dataset held in memory: train / held-out test / fixed reference split.

    ``extras`` carries dataset-specific structure keyed by name, e.g. the latent
    coordinates of ``orbit_manifold`` samples, indexed like ``train_x``.
    """

    train_x: Tensor
    train_y: Tensor
    test_x: Tensor
    test_y: Tensor
    reference_x: Tensor
    reference_y: Tensor
    num_classes: int
    batch_size: int
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])

    def to(self, device: torch.device) -> Data:
        move = {k: v.to(device) for k, v in vars(self).items() if isinstance(v, Tensor)}
        return Data(**{**vars(self), **move})


@dataclass
class Batch:
    """One training batch: inputs and labels (on the data's device) and their indices into
    ``Data.train_x`` (on the CPU, so that reading them never waits for the device)."""

    x: Tensor
    y: Tensor
    index: Tensor
    step: int


def host_to_device(tensor: Tensor, device: torch.device) -> Tensor:
    """``tensor`` (on the CPU) on ``device``, without waiting for the device.

    A plain ``.to("cuda")`` of pageable memory waits until the GPU has finished all queued
    work, so the host cannot queue the next kernels meanwhile; on CUDA the tensor is copied
    through pinned memory with ``non_blocking=True`` instead (the copy is ordered on the
    stream like any kernel). Elsewhere it is ``tensor.to(device)``. A tensor that is already
    pinned is copied from its own memory: do not write to it until the device has run.
    """
    if torch.device(device).type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


class Augmentation(Protocol):
    """``aug(x, index, generator, view)``: one random view of every sample of the batch.

    ``index`` are the samples' indices into the training split (group-action
    augmentations look up latent coordinates by them); ``generator`` is a CPU
    ``torch.Generator`` from which all per-sample randomness is drawn; ``view`` is the
    view's number (0, 1, ...), for asymmetric two-view recipes such as BYOL's.

    An augmentation that looks samples up by ``index`` also provides ``on(split)``: itself
    for indices into another split (``test``, ``reference``). A metric that augments
    held-out samples calls it (``augmentation_on``); without it the samples' values are all
    an augmentation may use.
    """

    def __call__(
        self, x: Tensor, index: Tensor, generator: torch.Generator, view: int = 0
    ) -> Tensor: ...


def augmentation_on(augmentation: Augmentation, split: str) -> Augmentation:
    """``augmentation`` for samples indexed into ``split``: its ``on(split)`` where it looks
    samples up by index, else itself."""
    on = getattr(augmentation, "on", None)
    return augmentation if on is None else on(split)


class Arm(nn.Module):
    """One trained model: backbone, head and objective (with the objective's own modules)."""

    def __init__(self, backbone: nn.Module, head: nn.Module, objective: Objective) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.objective = objective

    def represent(self, x: Tensor) -> Tensor:
        """Backbone features z = f(x)."""
        return self.backbone(x)

    def embed(self, x: Tensor) -> Tensor:
        """Head outputs h(f(x))."""
        return self.head(self.backbone(x))


class Objective(nn.Module):
    """A training loss. ``n_views`` augmented views of the batch are passed in ``views``.

    The base class itself is the "no objective" of an arm that is only measured.
    """

    n_views: ClassVar[int] = 2

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        """The scalar loss of ``arm`` on the batch."""
        raise TypeError(f"{type(self).__name__} defines no loss: an objective implements "
                        "forward(arm, batch, views)")

    def setup(self, arm: Arm) -> None:
        """Called once after the arm is built and initialised, before the optimizer exists
        (an EMA target copies the online network here, with ``requires_grad=False``)."""

    def after_step(self, arm: Arm, step: int, total_steps: int) -> None:
        """Called after each optimizer step (EMA targets update here)."""


@dataclass
class BuildContext:
    """What a factory may need to know about the run being built.

    ``seed`` is the seed of the component's own random stream (``geobench.train.streams``):
    ``data`` for a dataset, ``init/<component>`` for a model part, ``metric/<id>`` for a
    metric; ``trial_seed`` is the cell's trial seed, from which every stream derives.
    ``spec`` is the arm's resolved run spec as recorded (JSON, every default filled in).
    ``registry`` is the registry the run builds from: a factory builds the components its
    ``Nested`` params name through it (``ctx.registry.build(kind, spec, ctx)``).
    """

    seed: int
    device: torch.device
    data: Data | None = None
    trial_seed: int = 0
    feature_dim: int | None = None
    embed_dim: int | None = None
    model: nn.Module | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    registry: Registry | None = None


@dataclass
class MetricContext:
    """What a metric sees when it is evaluated.

    For a per-arm metric ``arm`` is the arm measured and ``reference`` the suite's first arm
    (``arm`` itself on the first arm), for metrics that relate an arm to it.  For a cross-arm
    metric (``Metric.cross_arm``) ``arm`` is compared against ``reference``.  ``batch`` and
    ``views`` are the step's inputs of ``arm`` (an arm with ``replicate > 0`` has its own).
    ``history`` holds this arm's earlier values of this metric: field -> [(step, value)].
    ``lrs`` are the learning rates of the steps so far; ``optimizer`` is the arm's optimizer
    (its param groups carry the mirror maps of ``mirror_descent``); ``registry`` the
    registry the arm was built from.
    ``seed`` is the metric instance's own stream (the same at every step: fixed sample
    sets), ``generator`` its stream at this step (fresh draws); both are the same for every
    arm, so arms are measured on the same draws.
    """

    step: int
    total_steps: int
    arm_name: str
    arm: Arm
    data: Data
    batch: Batch
    views: list[Tensor]
    augmentation: Augmentation
    generator: torch.Generator
    spec: dict[str, Any]
    seed: int = 0
    reference_name: str | None = None
    reference: Arm | None = None
    history: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    lrs: list[float] = field(default_factory=list)
    optimizer: torch.optim.Optimizer | None = None
    registry: Registry | None = None


@dataclass
class StepEvent:
    """One training step of one arm as the engine ran it, sent after the update to the
    metrics of that arm that observe training (``Metric.observe``)."""

    step: int
    total_steps: int
    arm_name: str
    arm: Arm
    batch: Batch
    views: list[Tensor]
    lr: float
    optimizer: torch.optim.Optimizer


class Metric(abc.ABC):
    """A measurement: ``metric(ctx) -> {field: value}`` (finite floats or NaN)."""

    cross_arm: ClassVar[bool] = False

    def __init__(self, params: MetricParams) -> None:
        self.params = params

    @property
    def every(self) -> int | None:
        return self.params.every

    @abc.abstractmethod
    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        """The metric's fields at ``ctx.step``."""

    def observe(self, event: StepEvent) -> None:
        """Called after every training step of the measured arm, for a metric that follows
        training between its evaluations (override it; draw no randomness here)."""
        return None


class Init(Protocol):
    """Modifies a freshly built arm in place before training starts."""

    def __call__(self, arm: Arm, data: Data) -> None: ...


class Executor(abc.ABC):
    """Runs a run's cells: ``map(fn, items)`` calls ``fn`` on each item and yields ``(item,
    result)`` as results arrive (the result is the exception when the executor lost the
    task). Everything else ``geobench run`` reads of an executor, with its default:

    - ``in_process``: ``fn`` runs in this process, so the run shows the running cell's
      steps (False).
    - ``tasks_hold_leases``: its tasks may outlive the run (a scheduler's job array);
      ``map`` then also takes ``lease=`` (a ``run.leases.TaskLease`` each task takes its
      cell over with), ``fresh=`` (a rerun: results earlier tasks left are not used) and
      ``report=`` (a callable that shows the run a line, e.g. the tasks' states) (False).
    - ``fit_memory(peak_mb, available_mb)``: an executor that starts workers here starts
      no more than ``available_mb`` holds at a cell's calibrated ``peak_mb``, and returns
      the line saying so (None: nothing to fit).
    """

    in_process: ClassVar[bool] = False
    tasks_hold_leases: ClassVar[bool] = False

    @abc.abstractmethod
    def map(self, fn: Callable[[Any], Any], items: Iterable[Any],
            **task: Any) -> Iterator[tuple[Any, Any]]:
        """``(item, fn(item))`` for each item, as results arrive."""

    def fit_memory(self, peak_mb: float, available_mb: float) -> str | None:
        """The line to print once workers are fitted to memory (None: nothing to fit)."""
        return None


@dataclass(frozen=True)
class LogRun:
    """One cell as an experiment tracker sees it: ``folder`` (the cell's run folder,
    ``<log dir>/<suite>[_<profile>]/<varied keys>-<cell id>``), ``name`` (its varied keys),
    the suite and profile, ``config`` (the cell's resolved config, as stored) and
    ``hparams`` (its suite, profile and varied keys as flat scalars)."""

    folder: Path
    name: str
    suite: str
    profile: str
    config: dict[str, Any]
    hparams: dict[str, float | int | str | bool]


class Logger(abc.ABC):
    """An experiment tracker. The factory builds one per cell (and once in the parent, to
    check that it can be built: import its package there, write nothing); the engine calls
    ``start`` before training, ``log`` with each step's new values (tags
    ``<arm>/<metric id>.<field>``, ``loss.train`` among them), ``arm_diverged`` when one arm
    stops while the others train on, ``finish`` with the cell's status. geobench catches
    what these raise: a failing logger is switched off with one warning and never fails
    the cell."""

    @abc.abstractmethod
    def start(self, run: LogRun) -> None:
        """Open the cell's run (write the config)."""

    @abc.abstractmethod
    def log(self, step: int, scalars: dict[str, float]) -> None:
        """Record ``scalars`` (tag -> value) at ``step``; steps arrive in non-decreasing
        order."""

    def arm_diverged(self, arm: str, step: int, reason: str) -> None:  # noqa: B027
        """Arm ``arm`` diverged at ``step`` (``reason``) and logs nothing more; the cell's
        other arms go on. Default: nothing to record."""

    @abc.abstractmethod
    def finish(self, status: str) -> None:
        """Close the run; ``status`` is the cell's (complete, diverged, failed), or
        ``interrupted`` when the run stops mid-cell. Also called, with ``failed``, after
        ``start`` or ``log`` raised."""


Factory = Callable[[Any, BuildContext], Any]


def trainable(model: nn.Module) -> list[tuple[str, Tensor]]:
    """The parameters an optimizer over ``model`` updates: those with requires_grad."""
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]


__all__ = ["Arm", "Augmentation", "Batch", "BuildContext", "Data", "DataParams", "Direction",
           "EmptyParams", "Executor", "Factory", "FieldDoc", "Init", "LogRun", "Logger",
           "Metric", "MetricContext", "MetricParams", "Nested", "Objective",
           "Params", "StepEvent", "host_to_device", "trainable"]
