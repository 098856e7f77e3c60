"""Which mirror map each parameter gets: one map for all, or fnmatch patterns on names.

``mirror_map`` and ``maps`` are nested components (kind ``mirror_maps``): the suite
validates them like any component and the optimizer builds them through the run's
registry (``ctx.registry``), so a map that another package registers is usable by name.
Patterns are matched with ``fnmatch.fnmatchcase`` against the full parameter name as
``named_parameters`` of the optimized module gives it (for an arm:
``backbone.layers.0.weight``; ``*`` also matches dots); the first matching pattern, in the
order written, wins.  A pattern other than
the catch-all ``*`` that matches no parameter is an error (most likely a misspelt name), and
so is a parameter no pattern matches; ``geobench validate`` refuses both, checking the
patterns against the arm built on the meta device (``maps_need``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Annotated, Any

import torch
from pydantic import Field, model_validator
from torch import Tensor, nn

from geobench.api import BuildContext, MirrorMap, Nested, Params, trainable
from geobench.params import Layout, Need, Part, Values
from geobench.plugins import Registry


class MirrorDescentParams(Params):
    """Parameters of the ``mirror_descent`` optimizer."""

    lr: float = Field(..., gt=0, description="step size η (the engine may rescale it)")
    weight_decay: float = Field(0.0, ge=0, description="adds wd·θ to the gradient")
    compile: bool = Field(False, description="fuse each tensor's update with torch.compile "
                                             "(compiles at the first step)")
    mirror_map: Annotated[dict[str, Any] | None, Nested("mirror_maps")] = Field(
        None, description="one map for every parameter, {name: ..., **params} "
        "(default: euclidean)"
    )
    maps: Annotated[dict[str, dict[str, Any]] | None, Nested("mirror_maps")] = Field(
        None, description="{fnmatch pattern on parameter name: map spec}; first match wins"
    )

    @model_validator(mode="after")
    def _one_of(self) -> MirrorDescentParams:
        if self.mirror_map is not None and self.maps is not None:
            raise ValueError("give either mirror_map or maps, not both")
        specs = [self.mirror_map] if self.mirror_map is not None else []
        specs += list((self.maps or {}).values())
        for spec in specs:
            if "name" not in spec:
                raise ValueError(f"mirror map spec {spec} has no 'name'")
        return self


def build_map(spec: dict[str, Any], ctx: BuildContext) -> MirrorMap:
    """Build one mirror map ``{name: ..., **params}`` through the run's registry."""
    if ctx.registry is None:
        raise ValueError("building a mirror map needs ctx.registry (the run's registry)")
    return ctx.registry.build("mirror_maps", spec, ctx)


def first_matches(names: list[str], patterns: list[str]) -> dict[str, str | None]:
    """Name -> the first pattern that matches it (None: none does)."""
    return {name: next((pat for pat in patterns if fnmatchcase(name, pat)), None)
            for name in names}


def pattern_problem(matches: dict[str, str | None], patterns: list[str]) -> str | None:
    """What keeps ``patterns`` from assigning a map to each parameter (``matches``:
    ``first_matches`` of the parameters' names): a parameter none matches, or a pattern
    other than ``*`` that matches none; else None."""
    names = list(matches)
    unmatched = [name for name, pat in matches.items() if pat is None]
    if unmatched:
        return (f"parameter {unmatched[0]!r} matches none of the map patterns {patterns}; "
                "add a catch-all '*'")
    unused = [pat for pat in patterns if pat not in matches.values() and pat != "*"]
    if unused:
        shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12
                                         else "")
        return f"map pattern(s) {unused} match no parameter; parameters: {shown}"
    return None


def maps_in_use(maps: Values, layout: Layout | None) -> dict[tuple[str, ...], Part]:
    """The maps that some trainable parameter gets (``maps``: each map's place in the
    optimizer's params -> the map; all of them where the layout is unknown or not built)."""
    if layout is None or layout.error is not None:
        return dict(maps)
    patterns = [place[1] for place in maps if place[0] == "maps"]
    used = set(first_matches(layout.names(), patterns).values())
    return {place: part for place, part in maps.items()
            if place[0] != "maps" or place[1] in used}


def degree_problem(maps: Values, layout: Layout | None) -> str | None:
    """What keeps the maps in use from sharing one horizon degree: a map that gives none,
    or two degrees; else None."""
    used = maps_in_use(maps, layout)
    for place, part in used.items():
        if "horizon_degree" not in part.gives:
            where = "mirror_map" if place == ("mirror_map",) else f"maps[{place[1]!r}]"
            return f"the mirror map {part.name!r} ({where}) gives no 'horizon_degree'"
    degrees = sorted({part.gives["horizon_degree"] for part in used.values()})
    if len(degrees) > 1:
        return (f"the maps that parameters get have horizon degrees {degrees} (Q-margins of "
                "mixed degree are not defined)")
    return None


def one_degree(wants: str) -> Need:
    """Every map in use gives its horizon degree, and they share one (nested mirror maps:
    the fact ``mirror_maps``; read with the arm's layout where it is known)."""
    return Need(("mirror_maps",), lambda maps, layout: degree_problem(maps, layout) is None,
                wants, says=degree_problem, optional=("layout",))


def maps_need(params: MirrorDescentParams) -> list[Need]:
    """``maps`` patterns that fit the parameters of the arm as built for the data."""
    if params.maps is None:
        return []
    patterns = list(params.maps)

    def problem(layout: Layout) -> str | None:
        return pattern_problem(first_matches(layout.names(), patterns), patterns)

    return [Need(("layout",), lambda layout: layout.error is not None or problem(layout) is None,
                 "map patterns that fit the arm's parameters", says=problem)]


def assign_maps(
    named: list[tuple[str, Tensor]], params: MirrorDescentParams, ctx: BuildContext
) -> list[tuple[str, Tensor, MirrorMap]]:
    """(name, parameter, map) for every parameter, in the order given."""
    if params.maps is None:
        mirror_map = build_map(params.mirror_map or {"name": "euclidean"}, ctx)
        return [(name, p, mirror_map) for name, p in named]
    built = {pattern: build_map(spec, ctx) for pattern, spec in params.maps.items()}
    matches = first_matches([name for name, _ in named], list(built))
    problem = pattern_problem(matches, list(built))
    if problem is not None:
        raise ValueError(problem)
    return [(name, p, built[matches[name]]) for name, p in named]


def optimizer_maps(
    model: nn.Module, optimizer_spec: dict[str, Any], device: torch.device | None = None, *,
    registry: Registry,
) -> list[tuple[str, Tensor, MirrorMap]]:
    """The map of every trainable parameter under the optimizer ``optimizer_spec``.

    ``mirror_descent`` specs are resolved as the optimizer resolves them (maps built
    through ``registry``); any other optimizer is gradient-based and gets the euclidean map
    (R = θ²/2).
    """
    named = trainable(model)
    spec = dict(optimizer_spec)
    ctx = BuildContext(seed=0, device=device or torch.device("cpu"), registry=registry)
    if spec.pop("name", None) != "mirror_descent":
        return assign_maps(named, MirrorDescentParams(lr=1.0), ctx)  # maps ignore lr
    return assign_maps(named, MirrorDescentParams.model_validate(spec), ctx)
