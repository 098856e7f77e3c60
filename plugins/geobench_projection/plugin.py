"""Registers P1's components: SSL objectives, the collapse init, the metrics of
projection-head geometry and the commands ``geobench analyze`` and ``geobench
projection-figures`` (the heads are the core's)."""

from geobench.hookspecs import hookimpl, lazy


@hookimpl
def register_commands(cli):
    cli.add("analyze", "orbit compression / metric singularity of a checkpoint",
            lazy("geobench_projection.analyze:arguments"), lazy("geobench_projection.analyze:main"))
    cli.add("projection-figures", "faceted figures of a stored series, a panel per setting",
            lazy("geobench_projection.figures:arguments"),
            lazy("geobench_projection.figures:main"))


@hookimpl
def register_objectives(register):
    from geobench.params import Need, at_least, has
    from geobench_projection.objectives import dino, redundancy, stopgrad

    of_head = {"head_loss": True}
    owning = {"head_loss": True, "extra_params": True}

    def predictor(params) -> list[Need]:
        return [has("predictor", "a head with a predictor (or require_predictor: false)")] \
            if params.require_predictor else []

    register("simsiam", stopgrad.build_simsiam, params=stopgrad.SimSiamParams, gives=of_head,
             needs=predictor,
             doc="SimSiam: predictor vs stop-gradient projection, negative cosine.")
    register("byol", stopgrad.build_byol, params=stopgrad.BYOLParams, gives=owning,
             needs=predictor,
             doc="BYOL: predictor regression onto an EMA target (cosine momentum schedule).")
    statistics = [at_least("batch", 2, "batches of at least 2 samples (statistics over "
                                       "the batch)")]
    register("vicreg", redundancy.build_vicreg, params=redundancy.VICRegParams, gives=of_head,
             needs=statistics, doc="VICReg: invariance + variance + covariance terms.")
    register("barlow_twins", redundancy.build_barlow_twins, params=redundancy.BarlowTwinsParams,
             gives=of_head, needs=statistics, doc="Barlow Twins: cross-correlation to identity.")
    register("dino", dino.build_dino, params=dino.DINOParams, gives=owning,
             doc="DINO: centred, sharpened EMA teacher; cross-entropy over prototypes.")


@hookimpl
def register_inits(register):
    from geobench_projection import inits

    register("collapse", inits.build_collapse, params=inits.CollapseParams,
             doc="Start at (eps=0) or near (eps>0) collapse: f(x) = eps f0(x) + c.")


@hookimpl
def register_metrics(register):
    from geobench.params import has
    from geobench_projection.metrics import collapse, guillotine, hessian, orbit, singularity

    head_loss = [has("head_loss", "an objective that is a loss of the head's outputs "
                                  "(simsiam, byol, vicreg, barlow_twins, dino)")]
    register("effective_hessian", hessian.build_effective_hessian,
             params=hessian.EffectiveHessianParams, needs=head_loss,
             doc="lambda_min/max, condition, negatives of H_eff, G, K w.r.t. the representation.",
             fields=hessian.EFFECTIVE_HESSIAN_FIELDS)
    register("hessian_tracking", hessian.build_hessian_tracking,
             params=hessian.HessianTrackingParams, needs=head_loss,
             doc="effective_hessian on an every-N schedule along training.",
             fields=hessian.EFFECTIVE_HESSIAN_FIELDS)
    register("collapse", collapse.build_collapse_metric, params=collapse.CollapseParams,
             doc="Effective rank and normalised std of backbone and head outputs.",
             fields=collapse.COLLAPSE_FIELDS)
    register("escape_step", collapse.build_escape_step, params=collapse.EscapeParams,
             doc="First step the effective rank (or std) exceeds a threshold.",
             fields=collapse.ESCAPE_STEP_FIELDS)
    register("orbit_compression", orbit.build_orbit_compression, params=orbit.OrbitParams,
             doc="Orbit spread / total spread, backbone vs head; class separation.",
             fields=orbit.ORBIT_COMPRESSION_FIELDS)
    register("metric_singularity", singularity.build_metric_singularity,
             params=singularity.SingularityParams, needs=head_loss,
             doc="Rayleigh quotient of G along augmentation tangents vs random directions.",
             fields=singularity.METRIC_SINGULARITY_FIELDS)
    register("guillotine", guillotine.build_guillotine, params=guillotine.GuillotineParams,
             needs=guillotine.needs,
             doc="Probe accuracy on backbone minus on head outputs.",
             fields=guillotine.GUILLOTINE_FIELDS)
