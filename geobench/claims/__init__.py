"""The claims floor, between the suite and the reports: which cells a claim part reads
(``select``), the claims checked once a suite is expanded (``validate``), the units a claim
form reads from the store (``forms``, ``units``, ``values``), the verdicts with their tests,
p-values and Holm's correction over the suite and over the paper (``verdicts``, ``stats``,
``family``), and how a reader meets them: the claims table, the per-unit CSV (``claims_table``)
and the forest plot (``forest``)."""

from geobench.claims.validate import check_claims
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict, evaluate

__all__ = ["NOT_IN_PROFILE", "StoredValues", "Verdict", "check_claims", "evaluate"]
