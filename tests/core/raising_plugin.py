"""A test-local plugin of components that raise, for the tests of failures: a metric that
raises on one named arm, one whose ``observe`` raises on it, and a head whose forward raises
once called a given number of times.

=======  ==================  ===========================================================
metrics  raise_on_arm        ``{"value": step}``; raises ValueError on arm ``arm``
         raise_observing     ``{"steps": observed}``; its ``observe`` raises on arm
                             ``arm`` from step ``at`` on
heads    raising_head        the identity, raising RuntimeError from its ``after``-th call
=======  ==================  ===========================================================

In the test process it is a built-in (``raising``, see ``loaded``); CLI subprocesses get it
installed as the distribution ``geobench-raising`` (module ``geobench_raising``, entry point
``raising``, see ``install``). It imports only geobench, torch and pydantic.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from torch import Tensor, nn

from geobench.contract.hooks import hookimpl
from geobench.contract.interfaces import (
    BuildContext,
    FieldDoc,
    Metric,
    MetricContext,
    MetricParams,
    Params,
    StepEvent,
)

DIST, VERSION, ENTRY, MODULE = "geobench-raising", "0.2", "raising", "geobench_raising"


class RaiseOnArmParams(MetricParams):
    arm: str = Field(description="the arm the metric raises on")


class RaiseOnArm(Metric):
    """The step; on arm ``arm`` it raises instead."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        if ctx.arm_name == self.params.arm:
            raise ValueError(f"raise_on_arm refuses arm {ctx.arm_name}")
        return {"value": float(ctx.step)}


class RaiseObservingParams(MetricParams):
    arm: str = Field(description="the arm whose step events it raises on")
    at: int = Field(0, ge=0, description="the first step it raises at")


class RaiseObserving(Metric):
    """How many steps it observed; on arm ``arm`` its ``observe`` raises from step ``at``."""

    def __init__(self, params: RaiseObservingParams) -> None:
        super().__init__(params)
        self.observed = 0

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        return {"steps": float(self.observed)}

    def observe(self, event: StepEvent) -> None:
        if event.arm_name == self.params.arm and event.step >= self.params.at:
            raise RuntimeError(f"raise_observing refuses step {event.step}")
        self.observed += 1


class RaisingHeadParams(Params):
    after: int = Field(1, ge=0, description="calls that pass before it raises")


class RaisingHead(nn.Module):
    """The identity, raising from its ``after``-th call on."""

    def __init__(self, dim: int, after: int) -> None:
        super().__init__()
        self.out_dim, self.after, self.calls = dim, after, 0

    def forward(self, z: Tensor) -> Tensor:
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("raising_head refuses to project")
        return z


def build_raising_head(params: RaisingHeadParams, ctx: BuildContext) -> RaisingHead:
    return RaisingHead(ctx.feature_dim, params.after)


@hookimpl
def register_metrics(register):
    register("raise_on_arm", lambda p, ctx: RaiseOnArm(p), params=RaiseOnArmParams,
             doc="the step, raising on one arm (test plugin)",
             fields={"value": FieldDoc("the step")})
    register("raise_observing", lambda p, ctx: RaiseObserving(p), params=RaiseObservingParams,
             doc="steps observed, its observe raising on one arm (test plugin)",
             fields={"steps": FieldDoc("training steps observed")})


@hookimpl
def register_heads(register):
    register("raising_head", build_raising_head, params=RaisingHeadParams,
             doc="identity head that raises after some calls (test plugin)")


def install(site: Path) -> None:
    """This file installed in ``site`` as the distribution ``geobench-raising``."""
    from tests.conftest import write_distribution

    write_distribution(site, DIST, VERSION, ENTRY, MODULE, Path(__file__).read_text())
