"""The claim forms, one module each: a form reads a part's selected cells into units
(``collect_units``), says when a profile can decide the part, checks its own keys and names
itself in the claims table. A new form is a module here, its entry in ``FORMS`` and its keys in
the suite schema (``suite/schema.py``)."""

from geobench.claims.forms.arms import Arms
from geobench.claims.forms.base import Form
from geobench.claims.forms.one_sample import OneSample
from geobench.claims.forms.pairs import Pairs
from geobench.claims.forms.series_stats import SeriesStats
from geobench.claims.forms.trend import Trend

FORMS: tuple[Form, ...] = (Trend(), OneSample(), Arms(), SeriesStats(), Pairs())
"""Tried in order: the first whose ``applies`` takes a part reads it."""


def form_of(part: object) -> Form:
    """The form that reads ``part`` (a claim or one of its ``also`` parts)."""
    return next(f for f in FORMS if f.applies(part))


__all__ = ["FORMS", "Form", "form_of"]
