from geobench.geometry.similarity import (  # noqa: F401
    MinibatchCKA,
    frobenius_gap,
    linear_cka,
    rsa,
    similarity_matrix,
)
