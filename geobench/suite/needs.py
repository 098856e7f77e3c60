"""Each arm of a grid point checked against its components' needs (``contract.needs``):
the facts its components give, with the core's own (``batch``, ``classes``, ``arms``,
``outputs``: the head's width, else the backbone's ``features`` when the head declares its
facts and sets no width), then every need of every component, metrics included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from geobench.contract.needs import Facts, gives_of, needs_of
from geobench.contract.registry import Registry
from geobench.contract.spec import COMPONENT_KINDS, ArmSpec, Component
from geobench.suite.load import Loc
from geobench.suite.yamlio import SuiteError


def _components(spec: ArmSpec) -> list[tuple[tuple[Any, ...], str, Component]]:
    """(location, kind, component) of every component of the arm, metrics last."""
    out = [((key,), kind, getattr(spec, key)) for key, kind in COMPONENT_KINDS.items()
           if getattr(spec, key) is not None]
    return out + [(("metrics", i), "metrics", m) for i, m in enumerate(spec.metrics)]


def arm_facts(registry: Registry, spec: ArmSpec, arms: int) -> dict[str, tuple[Any, str]]:
    """What the arm's components give (a fact given as true by any of them is true; else
    the first giver's value holds) and the core's facts."""
    facts: dict[str, tuple[Any, str]] = {}
    for loc, kind, comp in _components(spec):
        who = f"{loc[0]} {comp.name!r}"
        for fact, value in gives_of(registry.get(kind, comp.name).gives, comp.params).items():
            if fact not in facts or (value is True and facts[fact][0] is not True):
                facts[fact] = (value, who)
    data = spec.data.params
    who = f"data {spec.data.name!r}"
    batch, n_train = getattr(data, "batch_size", None), getattr(data, "n_train", None)
    if isinstance(batch, int):
        facts["batch"] = (min(batch, n_train) if isinstance(n_train, int) else batch, who)
    classes = getattr(data, "classes", None)
    if classes is not None:
        facts["classes"] = (classes if isinstance(classes, int) else len(classes), who)
    facts["arms"] = (arms, "the cell")
    head = registry.get("heads", spec.head.name)
    if "outputs" not in facts and "features" in facts and head.gives is not None:
        facts["outputs"] = facts["features"]  # a head that declares no width keeps it
    return facts


def check_needs(registry: Registry, spec: ArmSpec, arms: int,
                fail: Callable[[Loc, str], SuiteError]) -> None:
    """Raise ``fail(<component>.name, ...)`` at the first need the arm does not meet."""
    facts: Facts = arm_facts(registry, spec, arms)
    for loc, kind, comp in _components(spec):
        for need in needs_of(registry.get(kind, comp.name).needs, comp.params):
            problem = need.problem(facts)
            if problem is not None:
                raise fail(loc + ("name",), f"{kind[:-1]} {comp.name!r} needs {problem}")
