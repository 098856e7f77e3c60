"""Metrics of projection-head geometry: effective Hessian, collapse, orbits, singularity."""
