"""Each arm of a grid point checked against its components' needs (``contract.needs``):
the facts its components give (nested components too, by place: ``Values``), with the
core's own (``batch``, ``classes``, ``arms``, ``outputs``: the head's width, else the
backbone's ``features`` when the head declares its facts and sets no width; ``layout`` and
``layouts``, built on the meta device only when a need asks), then every need of every
component, metrics and nested components included; the head's forward pass on the
backbone's features, where the data declares its ``input_shape`` (``HEAD_RUNS``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from geobench.contract.layout import HEAD_RUNS
from geobench.contract.needs import Part, Values, gives_of, needs_of
from geobench.contract.param_models import nested_kinds, nested_specs
from geobench.contract.registry import Registry
from geobench.contract.spec import COMPONENT_KINDS, ArmSpec, Component
from geobench.suite.load import Loc
from geobench.suite.yamlio import SuiteError

Given = tuple[Any, str]


def _components(registry: Registry, spec: ArmSpec
                ) -> list[tuple[tuple[Any, ...], str, Component, bool]]:
    """(location, kind, component, nested) of every component of the arm, metrics after the
    others and each component's nested components right after it."""
    top = [((key,), kind, getattr(spec, key)) for key, kind in COMPONENT_KINDS.items()
           if getattr(spec, key) is not None]
    top += [(("metrics", i), "metrics", m) for i, m in enumerate(spec.metrics)]
    out = []
    for loc, kind, comp in top:
        out.append((loc, kind, comp, False))
        model = type(comp.params)
        for field, inner in nested_kinds(model).items():
            for at, inner_spec in nested_specs(model, field, getattr(comp.params, field)):
                params = registry.validate(inner, inner_spec)
                out.append((loc + (field,) + at, inner, Component(inner_spec["name"], params),
                            True))
    return out


def arm_facts(registry: Registry, spec: ArmSpec, arms: int) -> dict[str, Given]:
    """What the arm's components give (a fact given as true by any of them is true; else
    the first giver's value holds; nested components' values are collected by place,
    ``Values``, and each kind of nested component is a fact of its own: place -> ``Part``)
    and the core's facts."""
    facts: dict[str, Given] = {}
    nested: dict[str, tuple[Values, str]] = {}
    parent = ""
    for loc, kind, comp, inner in _components(registry, spec):
        parent = parent if inner else f"{loc[0]} {comp.name!r}"
        who = f"the {kind.replace('_', ' ')} of {parent}" if inner else parent
        gives = gives_of(registry.get(kind, comp.name).gives, comp.params)
        if inner:
            parts, _ = nested.setdefault(kind, (Values(), who))
            parts[loc[1:]] = Part(comp.name, dict(gives))
        for fact, value in gives.items():
            if inner:
                values, _ = nested.setdefault(fact, (Values(), who))
                values[loc[1:]] = value
            elif fact not in facts or (value is True and facts[fact][0] is not True):
                facts[fact] = (value, who)
    for fact, given in nested.items():
        facts.setdefault(fact, given)
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


class ArmFacts(Mapping[str, Given]):
    """An arm's facts, with ``layout`` and ``layouts`` built the first time a need reads
    them. They are given only where the data declares its ``input_shape`` and the build
    says what the layout is (an objective or init the meta device cannot build leaves it
    unknown)."""

    def __init__(self, registry: Registry, specs: Mapping[str, ArmSpec], arm: str) -> None:
        self._registry, self._specs, self._arm = registry, specs, arm
        self._given = arm_facts(registry, specs[arm], len(specs))
        self._lazy = {"layout", "layouts"} if "input_shape" in self._given else set()

    def _layout(self, arm: str) -> Any:
        from geobench.contract.meta_build import arm_layout  # torch, only when asked

        spec = self._specs[arm]
        facts = self._given if arm == self._arm else \
            arm_facts(self._registry, spec, len(self._specs))
        if "input_shape" not in facts:
            return None
        classes = facts.get("classes", (2, ""))[0]
        return arm_layout(self._registry, spec, tuple(facts["input_shape"][0]), classes)

    def _build(self, fact: str) -> None:
        """Give ``fact`` (``layout`` or ``layouts``) if its build says what it is."""
        self._lazy.discard(fact)
        if fact == "layout":
            layout = self._layout(self._arm)
            if layout is not None:
                self._given[fact] = (layout, "the arm built for the data")
            return
        layouts = {arm: self._layout(arm) for arm in self._specs}
        if all(layout is not None for layout in layouts.values()):
            self._given[fact] = (layouts, "the cell's arms built for the data")

    def __getitem__(self, fact: str) -> Given:
        if fact in self._lazy:
            self._build(fact)
        return self._given[fact]

    def __iter__(self) -> Iterator[str]:
        for fact in list(self._lazy):
            self._build(fact)
        return iter(self._given)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, fact: object) -> bool:
        if fact in self._lazy:
            self._build(str(fact))
        return fact in self._given


def check_needs(registry: Registry, specs: Mapping[str, ArmSpec], arm: str,
                fail: Callable[[Loc, str], SuiteError]) -> None:
    """Raise ``fail(<component>.name, ...)`` at the first need the arm ``arm`` of the cell
    ``specs`` does not meet (the core's ``HEAD_RUNS`` among the head's); the line names the
    arm where the cell has several."""
    facts = ArmFacts(registry, specs, arm)
    of_arm = f" of arm {arm!r}" if len(specs) > 1 else ""
    for loc, kind, comp, _ in _components(registry, specs[arm]):
        needs = needs_of(registry.get(kind, comp.name).needs, comp.params)
        for need in needs + ([HEAD_RUNS] if loc == ("head",) else []):
            problem = need.problem(facts)
            if problem is not None:
                raise fail(loc + ("name",), f"{kind[:-1]} {comp.name!r}{of_arm} needs {problem}")
