"""The core's built-in plugin: executors, generic heads, optimizers, metrics and loggers.

Loaded by module path (not an entry point), so it is there even with plugin autoload off.
Implementations are imported inside the hooks: loading this module stays cheap.
"""

from geobench.contract.hooks import hookimpl


@hookimpl
def register_executors(register):
    from geobench.run.executors.local import LocalParams, build_local
    from geobench.run.executors.pool import PoolParams, build_pool
    from geobench.run.executors.ray_cluster import RayParams, build_ray
    from geobench.run.executors.slurm import SlurmParams, build_slurm

    register("local", build_local, params=LocalParams, doc="Serial, in this process.")
    register("pool", build_pool, params=PoolParams,
             doc="N worker processes; the parent alone writes results.")
    register("ray", build_ray, params=RayParams,
             doc="One Ray task per cell on a local or existing cluster (geobench[ray]).")
    register("slurm", build_slurm, params=SlurmParams,
             doc="A Slurm job array through submitit, one cell per task (geobench[slurm]).")


@hookimpl
def register_heads(register):
    from geobench.components import heads

    contract = {"gives": heads.gives, "needs": heads.needs}
    register("identity", heads.build_identity_head, params=heads.IdentityHeadParams,
             doc="No head: h(z) = z (optional predictor).", **contract)
    register("linear", heads.build_linear_head, params=heads.LinearHeadParams,
             doc="Linear head h(z) = Wz (+ b) (optional predictor).", **contract)
    register("mlp", heads.build_mlp_head, params=heads.MLPHeadParams,
             doc="MLP head: depth 1-4, activation, norm, optional predictor.", **contract)


@hookimpl
def register_optimizers(register):
    from geobench.components import optimizers as o

    register("sgd", o.build_sgd, params=o.SGDParams, doc="SGD (torch.optim.SGD)")
    register("adam", o.build_adam, params=o.AdamParams, doc="Adam (torch.optim.Adam)")
    register("adamw", o.build_adamw, params=o.AdamWParams, doc="AdamW (torch.optim.AdamW)")
    register("lars", o.build_lars, params=o.LARSParams,
             doc="LARS: layer-wise trust ratio, momentum, weight decay (weights only)")


@hookimpl
def register_metrics(register):
    from geobench.components import metrics as m
    from geobench.contract.needs import TEST_SPLIT

    register("linear_probe", lambda p, ctx: m.LinearProbe(p), params=m.LinearProbeParams,
             doc="Linear-probe test accuracy on backbone or head features.",
             fields=m.LINEAR_PROBE_FIELDS, needs=[TEST_SPLIT])
    register("knn", lambda p, ctx: m.Knn(p), params=m.KnnParams,
             doc="k-NN (cosine) test accuracy on backbone or head features.",
             fields=m.KNN_FIELDS, needs=[TEST_SPLIT])
    register("nccc", lambda p, ctx: m.Nccc(p), params=m.ReadoutParams,
             doc="Nearest class-centre test accuracy on backbone or head features.",
             fields=m.NCCC_FIELDS, needs=[TEST_SPLIT])
    register("eval_loss", lambda p, ctx: m.EvalLoss(p), params=m.EvalLossParams,
             doc="The objective on held-out batches.", fields=m.EVAL_LOSS_FIELDS,
             needs=[TEST_SPLIT])
    register("effective_rank", lambda p, ctx: m.EffectiveRank(p), params=m.EffectiveRankParams,
             doc="Effective rank of backbone or head features on the reference set.",
             fields=m.EFFECTIVE_RANK_FIELDS)


@hookimpl
def register_loggers(register):
    from geobench.components.loggers.tensorboard import TensorBoardParams, build_tensorboard
    from geobench.components.loggers.wandb_offline import WandbParams, build_wandb

    register("tensorboard", build_tensorboard, params=TensorBoardParams,
             doc="TensorBoard event files, one run folder per cell (geobench[tensorboard]).")
    register("wandb", build_wandb, params=WandbParams,
             doc="Weights & Biases in offline mode, one run per cell (geobench[wandb]).")
