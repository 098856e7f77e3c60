"""Dotted keys and component-aware merging of run specs; a suite seen through one profile."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geobench.contract.registry import Registry, RegistryError
from geobench.contract.spec import COMPONENT_KINDS
from geobench.records import SINGLE_ARM
from geobench.suite.load import LoadedSuite, Loc
from geobench.suite.schema import Profile

Accepts = Callable[[str, str], "set[str] | None"]


def deep_merge(base: Any, over: Any, accepts: Accepts | None = None, _key: str = "") -> Any:
    """``over`` merged into a copy of ``base``; mappings merge key by key, the rest replaces.

    Where a run-spec component (``data``, ``head``, ...) changes its ``name``, the inherited
    params are kept only if the new component accepts them (``accepts(kind, name)``), so
    ``{objective: {name: nscl}}`` over ``{name: cl, tau: 0.2}`` keeps ``tau`` while
    ``{augment: {name: simclr}}`` over ``{name: gaussian_noise, sigma: 0.1}`` drops ``sigma``.
    """
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return copy.deepcopy(over)
    if accepts is not None and _key in COMPONENT_KINDS and "name" in over \
            and over["name"] != base.get("name"):
        allowed = accepts(COMPONENT_KINDS[_key], over["name"])
        if allowed is not None:
            base = {k: v for k, v in base.items() if k in allowed}
    out = copy.deepcopy(base)  # the result shares nothing with base: assign() writes into it
    for key, value in over.items():
        out[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
    return out


def merge_run(base: dict[str, Any], over: dict[str, Any], accepts: Accepts) -> dict[str, Any]:
    """Merge a partial run spec ``over`` into ``base`` (component-aware, see deep_merge)."""
    out = copy.deepcopy(base)  # the result shares nothing with base: assign() writes into it
    for key, value in over.items():
        out[key] = deep_merge(base.get(key), value, accepts, key) if key in base \
            else copy.deepcopy(value)
    return out


def overlay_run(spec: dict[str, Any], base: dict[str, Any], accepts: Accepts
                ) -> dict[str, Any]:
    """The run spec ``base`` laid over a copy of ``spec``: a component the base names
    replaces the spec's, one it leaves unnamed keeps only the params the spec's component
    accepts (``optimizer: {momentum: 0.9}`` over ``{name: adam}``), the rest merges."""
    out = copy.deepcopy(spec)
    for key, value in base.items():
        under = spec.get(key)
        if key in COMPONENT_KINDS and isinstance(value, dict) and "name" not in value \
                and isinstance(under, dict):
            allowed = accepts(COMPONENT_KINDS[key], under.get("name"))
            value = value if allowed is None else {k: v for k, v in value.items()
                                                   if k in allowed}
        out[key] = overlay(under, value) if key in spec else copy.deepcopy(value)
    return out


def overlay(under: Any, over: Any) -> Any:
    """``over`` laid over a copy of ``under``: mappings merge key by key, except that a
    mapping naming another component (``name``) replaces the one under it whole, at any
    depth (``mirror_map: {name: euclidean}`` over ``{name: quadratic, a: 2}``)."""
    if not (isinstance(under, dict) and isinstance(over, dict)) \
            or over.get("name", under.get("name")) != under.get("name"):
        return copy.deepcopy(over)
    out = copy.deepcopy(under)
    for key, value in over.items():
        out[key] = overlay(under[key], value) if key in under else copy.deepcopy(value)
    return out


def assign(spec: dict[str, Any], key: str, value: Any, accepts: Accepts) -> None:
    """Set the dotted ``key`` of a run spec to a grid value; a mapping given for a whole
    component, or a new ``<component>.name``, merges as in ``merge_run``."""
    head, _, rest = key.partition(".")
    if head in COMPONENT_KINDS and rest in ("", "name") and isinstance(spec.get(head), dict):
        over = value if rest == "" else {"name": value}
        if isinstance(over, dict):
            spec[head] = deep_merge(spec[head], over, accepts, head)
            return
    set_dotted(spec, key, value)


def set_dotted(doc: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = doc
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = copy.deepcopy(value)


def get_dotted(doc: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def accepts_of(registry: Registry) -> Accepts:
    def accepts(kind: str, name: str) -> set[str] | None:
        if not isinstance(name, str):
            return None
        try:
            return set(registry.get(kind, name).params.model_fields) | {"name"}
        except RegistryError:
            return None

    return accepts


@dataclass
class View:
    """The suite seen through one profile (``prof`` None: no profile, the suite as
    written): its base and arm overrides merged."""

    name: str
    prof: Profile | None
    base: dict[str, Any]
    arms: dict[str, dict[str, Any]]

    @property
    def loc(self) -> Loc:
        return ("profiles", self.name)


def profile_view(loaded: LoadedSuite, name: str, prof: Profile | None, accepts: Accepts) -> View:
    suite = loaded.suite
    base = merge_run(suite.base, prof.base, accepts) if prof else copy.deepcopy(suite.base)
    arms = {a: merge_run(suite.arms.get(a, {}), prof.arms.get(a, {}) if prof else {}, accepts)
            for a in list(suite.arms) or [SINGLE_ARM]}
    return View(name, prof, base, arms)
