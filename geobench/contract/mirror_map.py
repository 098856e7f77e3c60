"""The mirror-map contract: a separable potential and its conjugate, the component kind
``mirror_maps`` (paper P2's mirror descent builds one by name)."""

from __future__ import annotations

import abc
from typing import ClassVar

from torch import Tensor


class MirrorMap(abc.ABC):
    """A separable, strictly convex potential R and its convex conjugate Q = R*.

    The four functions act elementwise on a tensor of parameters (sums over elements are
    the caller's); ``grad_Q`` inverts ``grad_R``, so mirror descent reads
    ``θ⁺ = grad_Q(grad_R(θ) − η g)``.  ``alpha`` is the degree of the horizon function
    φ_α(θ) = lim_{η→0} η (α Σ Q(∇R(θ/η)))^{1/α} and ``horizon`` its closed form where
    known (metrics take the limit numerically without it).  A plugin registers a subclass
    under the ``mirror_maps`` kind; ``mirror_descent`` (paper P2's plugin) builds it by name.
    """

    name: ClassVar[str] = "mirror_map"
    alpha: float | None = None

    @abc.abstractmethod
    def R(self, theta: Tensor) -> Tensor:
        """Potential R(θ), elementwise."""

    @abc.abstractmethod
    def grad_R(self, theta: Tensor) -> Tensor:
        """∇R(θ): primal -> dual, elementwise."""

    @abc.abstractmethod
    def grad_Q(self, u: Tensor) -> Tensor:
        """∇Q(u) = (∇R)^{-1}(u): dual -> primal, elementwise."""

    @abc.abstractmethod
    def Q(self, u: Tensor) -> Tensor:
        """Convex conjugate Q(u) = sup_θ θu − R(θ), elementwise."""

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        """Write ∇Q(u) into ``out`` (same shape, dtype and device, not overlapping u).

        ``MirrorDescent`` calls it on chunks of its dual buffer with ``out`` the parameters'
        memory (``compile=True`` fuses ``grad_Q`` instead).  The default copies
        ``grad_Q(u)``; the built-in maps override it with arithmetic done in place (at most
        one temporary the size of u), in a form chosen for few elementwise passes that may
        differ from ``grad_Q``'s by a few ulp.
        """
        return out.copy_(self.grad_Q(u))

    def horizon(self, theta: Tensor) -> Tensor:
        """Closed-form horizon φ_α(θ) of the whole tensor (a scalar)."""
        raise NotImplementedError(f"mirror map {self!r} has no closed-form horizon")

    def _params(self) -> dict[str, float]:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{self.name}({args})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and repr(other) == repr(self)

    def __hash__(self) -> int:
        return hash(repr(self))
