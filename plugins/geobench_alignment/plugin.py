"""Registers the alignment components: CL / NSCL / SupCon / CE objectives and the cross-arm
alignment metrics of paper P3 (CKA, RSA, similarity gap, weight distance, Theorem 1 bound,
similarity descent) and the command ``geobench alignment-figures``."""

from geobench.hookspecs import hookimpl, lazy


@hookimpl
def register_commands(cli):
    cli.add("alignment-figures", "CKA over training and against C', tau and B",
            lazy("geobench_alignment.figures:arguments"), lazy("geobench_alignment.figures:main"))


@hookimpl
def register_objectives(register):
    from geobench.params import EmptyParams
    from geobench_alignment.objectives import (
        ContrastiveParams,
        NSCLParams,
        build_ce,
        build_nscl,
        build_nt_xent,
        build_supcon,
    )

    for name in ("cl", "simclr"):
        register(name, build_nt_xent, params=ContrastiveParams,
                 doc="NT-Xent (SimCLR) over the 2B views of a batch.")
    register("nscl", build_nscl, params=NSCLParams,
             doc="Negatives-only supervised contrastive: same-class views leave the denominator.")
    register("supcon", build_supcon, params=ContrastiveParams,
             doc="Supervised contrastive (Khosla et al. 2020): same-class views are positives.")
    register("ce", build_ce, params=EmptyParams, gives={"extra_params": True},
             doc="Cross-entropy of a linear classifier on the embedding (one view).")


@hookimpl
def register_metrics(register):
    from geobench.params import TWO_ARMS, MetricParams, same_sizes
    from geobench_alignment.bound import (
        ALIGNMENT_BOUND_FIELDS,
        BoundParams,
        build_alignment_bound,
    )
    from geobench_alignment.descent import (
        SIMILARITY_DESCENT_FIELDS,
        DescentParams,
        build_similarity_descent,
    )
    from geobench_alignment.metrics import (
        CKA_FIELDS,
        RSA_FIELDS,
        SIMILARITY_GAP_FIELDS,
        WEIGHT_DISTANCE_FIELDS,
        RSAParams,
        SpaceParams,
        build_cka,
        build_rsa,
        build_similarity_gap,
        build_weight_distance,
    )

    register("cka", build_cka, params=SpaceParams,
             doc="Linear CKA (biased and debiased) to the reference arm on the reference set.",
             needs=[TWO_ARMS], fields=CKA_FIELDS)
    register("rsa", build_rsa, params=RSAParams,
             doc="RSA: correlation of the two arms' RDMs on the reference set.",
             needs=[TWO_ARMS], fields=RSA_FIELDS)
    register("similarity_gap", build_similarity_gap, params=SpaceParams,
             doc="‖Sigma_ref - Sigma_arm‖_F of cosine similarity matrices on the reference set.",
             needs=[TWO_ARMS], fields=SIMILARITY_GAP_FIELDS)
    register("weight_distance", build_weight_distance, params=MetricParams,
             doc="Relative parameter-space distance to the reference arm.",
             needs=[TWO_ARMS, same_sizes(("backbone.", "head."), "arms whose backbone and "
                                         "head have as many parameters as the reference arm's")],
             fields=WEIGHT_DISTANCE_FIELDS)
    register("alignment_bound", build_alignment_bound, params=BoundParams,
             doc="Theorem 1 bound and CKA / RSA lower bounds next to the measured values.",
             needs=[TWO_ARMS], fields=ALIGNMENT_BOUND_FIELDS)
    register("similarity_descent", build_similarity_descent, params=DescentParams,
             doc="Similarity-descent proxy on the realised batches vs the network's Sigma.",
             fields=SIMILARITY_DESCENT_FIELDS)
