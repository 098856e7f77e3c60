"""Reusable geometry: plain functions on tensors, usable without the harness."""

from geobench.geometry.hessian import EffectiveHessian, spectrum_summary  # noqa: F401
from geobench.geometry.linalg import LinearOperator, lanczos_eigs  # noqa: F401
from geobench.geometry.probes import knn_accuracy, linear_probe_accuracy, nccc_accuracy  # noqa: F401
from geobench.geometry.rank import effective_rank, embedding_std  # noqa: F401
from geobench.geometry.similarity import (  # noqa: F401
    MinibatchCKA,
    frobenius_gap,
    linear_cka,
    rsa,
    similarity_matrix,
)
