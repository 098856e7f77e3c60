"""What a component needs from the rest of its arm, and what it gives: the contract that
validation checks on every grid point of a suite before any cell trains.

A component registers ``gives`` (facts about the arm it makes true: a mapping, or a
function of its params returning one) and ``needs`` (a list of ``Need``, or a function of
its params returning one). Facts in use (a plugin may add its own):

====================  ======================================================================
``input``             ``"image"`` (C, H, W) or ``"vector"`` (D,) samples (datasets)
``input_shape``       one sample's shape, ``(C, H, W)`` or ``(D,)`` (datasets)
``test_size``         the fewest test samples the data can have (datasets)
``image_size``        the side of square images (datasets)
``orbit``             samples carry the orbit coordinates orbit actions move (datasets)
``classes``           number of classes (datasets; the core takes a class subset's size)
``batch``             training batch size, at most ``n_train`` (the core, from the data params)
``arms``              arms in the cell (the core)
``features``          the backbone's feature width (backbones)
``outputs``           the arm's output width: the head's, else ``features`` (heads; core)
``predictor``         the head has a predictor (heads)
``head_loss``         the objective is a loss of the head's outputs (H_eff needs one)
``homogeneous``       the backbone is positively homogeneous in its parameters
``layered``           the backbone's weights chain layer to layer (neuron counts need it)
``extra_params``      the head or the objective has parameters of its own
``horizon_degree``    a mirror map's horizon degree alpha (mirror maps, nested in an optimizer)
``layout``            the arm's parameters as built for the data's ``input_shape`` on the meta
                      device, or why it cannot be built (the core, only when a need asks;
                      ``geobench.contract.meta_build``)
``layouts``           arm -> ``layout`` of every arm in the cell (the core, only when asked)
``<kind>``            the nested components of that kind (``mirror_maps``), as ``Values``:
                      place -> ``Part`` (its name and what it gives; the core)
====================  ======================================================================

A component nested in another's params (the mirror maps of ``mirror_descent``) gives facts
and has needs like any other; its facts are given as ``Values``, its place -> its value
(two maps of degrees 1 and 3: ``horizon_degree`` = ``{1.0, 3.0}``). A nested component that
does not give a fact is absent from that fact's ``Values``; the fact named after its kind
lists every one of them, so that a need can refuse one that gives nothing (a mirror map
without ``horizon_degree`` under a metric that needs the degree of every map).

A fact no component gives is unknown: a need on it holds, except a need made with ``has``,
a capability some component must declare (an undeclared plugin backbone does not count as
homogeneous). Each failed need is one line naming the needing component and who gave the
fact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Facts = Mapping[str, tuple[Any, str]]
"""Fact -> (value, who gave it: ``data 'digits'``, ``the cell``, ...)."""


@dataclass(frozen=True)
class Need:
    """``ok(*values)`` must hold for the values of ``facts``; ``wants`` says what in words
    (``"image inputs"``); ``given``: every fact must be given (a capability), else an
    unknown fact lets the need hold; ``says(*values)``: what is wrong, in words, where the
    facts' values alone would not say it."""

    facts: tuple[str, ...]
    ok: Callable[..., bool]
    wants: str
    given: bool = False
    says: Callable[..., str] | None = None
    optional: tuple[str, ...] = ()
    """Facts read after ``facts`` when given, else read as None (the need still applies)."""

    def problem(self, facts: Facts) -> str | None:
        """None when the need holds, else what is wrong (after ``needs``)."""
        known = [f for f in self.facts if f in facts]
        if len(known) < len(self.facts):
            if self.given:
                missing = next(f for f in self.facts if f not in facts)
                return f"{self.wants}; no component of the arm gives {missing!r}"
            return None
        values = [facts[f][0] for f in self.facts]
        values += [facts[f][0] if f in facts else None for f in self.optional]
        if self.ok(*values):
            return None
        if self.says is not None:
            return f"{self.wants}; {self.says(*values)}"
        return f"{self.wants}; " + ", ".join(f"{facts[f][1]} gives {f} = {facts[f][0]!r}"
                                             for f in self.facts)


def equal(fact: str, value: Any, wants: str) -> Need:
    """The fact is ``value`` (or unknown)."""
    return Need((fact,), lambda v: v == value, wants)


def at_least(fact: str, low: int, wants: str) -> Need:
    """The fact is a number ``>= low`` (or unknown)."""
    return Need((fact,), lambda v: v >= low, wants)


def has(fact: str, wants: str) -> Need:
    """Some component gives the fact as true."""
    return Need((fact,), lambda v: v is True, wants, given=True)


def lacks(fact: str, wants: str) -> Need:
    """No component gives the fact as true."""
    return Need((fact,), lambda v: v is not True, wants)


class Values(dict):
    """What nested components give for one fact: their place inside the component that
    holds them (``("maps", "backbone.*")``) -> value; shown as the set of values."""

    def __repr__(self) -> str:
        return "{" + ", ".join(sorted({repr(v) for v in self.values()})) + "}"


@dataclass(frozen=True)
class Part:
    """A nested component: its registered name and the facts it gives."""

    name: str
    gives: Mapping[str, Any]

    def __repr__(self) -> str:
        return repr(self.name)


def square(wants: str) -> Need:
    """Square images: ``input_shape`` is ``(C, S, S)``."""
    return Need(("input_shape",), lambda s: len(s) == 3 and s[1] == s[2], wants)


TEST_SPLIT = at_least("test_size", 1, "a test split (the data's test_fraction can leave it "
                     "empty)")
IMAGES = equal("input", "image", "image inputs (C, H, W)")
BATCH_NORM = at_least("batch", 2, "batches of at least 2 samples (batch norm)")
TWO_ARMS = at_least("arms", 2, "two or more arms (it compares arms)")


def batch_norm_if(used: bool) -> list[Need]:
    """``[BATCH_NORM]`` when a component uses batch norm."""
    return [BATCH_NORM] if used else []


Gives = Mapping[str, Any] | Callable[[Any], Mapping[str, Any]] | None
Needs = list[Need] | Callable[[Any], list[Need]] | None


def gives_of(gives: Gives, params: Any) -> Mapping[str, Any]:
    """A component's facts for ``params``."""
    return gives(params) if callable(gives) else (gives or {})


def needs_of(needs: Needs, params: Any) -> list[Need]:
    """A component's needs for ``params``."""
    return needs(params) if callable(needs) else list(needs or [])
