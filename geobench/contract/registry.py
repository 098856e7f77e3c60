"""Name -> factory registry with parameter models, did-you-mean on a miss, and origins."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from geobench.contract.errors import RegistryError, did_you_mean
from geobench.contract.hooks import KINDS
from geobench.contract.needs import Gives, Needs
from geobench.contract.param_models import EmptyParams, FieldDoc
from geobench.contract.param_text import param_rows

if TYPE_CHECKING:
    from geobench.contract.interfaces import BuildContext, Factory
    from geobench.contract.spec import Component


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    factory: Factory
    params: type[BaseModel]
    doc: str
    origin: str = "?"
    version: str = "?"
    fields: dict[str, FieldDoc] = field(default_factory=dict)
    gives: Gives = None
    needs: Needs = None

    def build(self, spec: dict[str, Any], ctx: BuildContext) -> Any:
        """Validate ``spec`` (without ``name``) against the params model and call the factory."""
        return self.factory(self.params.model_validate(spec), ctx)

    def field_doc(self, name: str) -> FieldDoc | None:
        """The declared meaning of field ``name`` (keys may be shell patterns: ``acc_*``)."""
        if name in self.fields:
            return self.fields[name]
        return next((d for pat, d in self.fields.items() if fnmatch.fnmatchcase(name, pat)),
                    None)

    def param_rows(self) -> list[dict[str, Any]]:
        """Every field of the params model as JSON: name, type, default, doc, constraints
        (``geobench.contract.param_text``)."""
        return [row.record() for row in param_rows(self.params)]


@dataclass
class Registry:
    """Every loaded component by kind and name. Named when a name is not registered:
    ``unloaded``, plugin name -> why it is not loaded (it failed to load, or was dropped),
    and ``absent``, (kind, name) -> where a component not loaded is known from."""

    entries: dict[str, dict[str, Entry]] = field(
        default_factory=lambda: {kind: {} for kind in KINDS}
    )
    unloaded: dict[str, str] = field(default_factory=dict)
    absent: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, entry: Entry) -> None:
        self._check_free(entry)
        self.entries[entry.kind][entry.name] = entry

    def merge(self, other: Registry) -> None:
        """Add every entry of ``other``, or none if one of their names is taken."""
        added = [e for entries in other.entries.values() for e in entries.values()]
        for entry in added:
            self._check_free(entry)
        for entry in added:
            self.entries[entry.kind][entry.name] = entry

    def _check_free(self, entry: Entry) -> None:
        existing = self.entries[entry.kind].get(entry.name)
        if existing is not None:
            raise RegistryError(
                f"{entry.kind[:-1]} {entry.name!r} is registered twice: by {existing.origin} "
                f"and by {entry.origin}"
            )

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries[kind])

    def get(self, kind: str, name: str) -> Entry:
        if kind not in self.entries:
            raise RegistryError(f"unknown component kind {kind!r}{did_you_mean(kind, list(KINDS))}")
        try:
            return self.entries[kind][name]
        except KeyError:
            raise RegistryError(self.not_registered(kind, name)) from None

    def not_registered(self, kind: str, name: str) -> str:
        """Why ``name`` is no ``kind`` here: the names registered, where it is known from,
        and the plugins that are not loaded."""
        allowed = ", ".join(self.names(kind)) or "none"
        known = self.absent.get((kind, name))
        unloaded = "".join(f"; {why}" for why in ([known] if known else []) +
                           list(self.unloaded.values()))
        return (f"{name!r} is not a registered {kind[:-1]}{did_you_mean(name, self.names(kind))}"
                f"; registered: {allowed}{unloaded}")

    def build(self, kind: str, spec: dict[str, Any], ctx: BuildContext) -> Any:
        """Build the component ``spec`` (``{name: ..., **params}``) of ``kind``."""
        spec = dict(spec)
        entry = self.get(kind, spec.pop("name"))
        return entry.build(spec, ctx)

    def create(self, kind: str, component: Component, ctx: BuildContext) -> Any:
        """Build a validated ``component`` of ``kind``: its params are validated again only
        if they are not the registered model's (a worker with other plugins installed)."""
        entry = self.get(kind, component.name)
        params = component.params
        if type(params) is not entry.params:
            params = entry.params.model_validate(params.model_dump())
        return entry.factory(params, ctx)

    def validate(self, kind: str, spec: dict[str, Any]) -> BaseModel:
        """Validate a component spec; raises ``RegistryError`` or ``ValidationError``."""
        spec = dict(spec)
        if "name" not in spec:
            raise RegistryError(f"missing 'name' (a registered {kind[:-1]})")
        return self.get(kind, spec.pop("name")).params.model_validate(spec)


__all__ = ["Entry", "Registry", "RegistryError", "EmptyParams", "ValidationError", "did_you_mean"]
