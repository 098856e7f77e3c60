"""The core's own plugin: executors and harness-level metrics (registered like any plugin)."""

from geobench.executors.local import LocalParams, build_local
from geobench.executors.pool import PoolParams, build_pool
from geobench.executors.ray_cluster import RayParams, build_ray
from geobench.executors.slurm import SlurmParams, build_slurm
from geobench.hookspecs import hookimpl
from geobench.metrics import (
    EVAL_LOSS_FIELDS,
    KNN_FIELDS,
    LINEAR_PROBE_FIELDS,
    NCCC_FIELDS,
    EvalLoss,
    EvalLossParams,
    Knn,
    KnnParams,
    LinearProbe,
    LinearProbeParams,
    Nccc,
    ReadoutParams,
)


@hookimpl
def register_executors(register):
    register("local", build_local, params=LocalParams, doc="Serial, in this process.")
    register("pool", build_pool, params=PoolParams,
             doc="N worker processes; the parent alone writes results.")
    register("ray", build_ray, params=RayParams,
             doc="One Ray task per cell on a local or existing cluster (geobench[ray]).")
    register("slurm", build_slurm, params=SlurmParams,
             doc="A Slurm job array through submitit, one cell per task (geobench[slurm]).")


@hookimpl
def register_metrics(register):
    register("linear_probe", lambda p, ctx: LinearProbe(p), params=LinearProbeParams,
             doc="Linear-probe test accuracy on backbone or head features.",
             fields=LINEAR_PROBE_FIELDS)
    register("knn", lambda p, ctx: Knn(p), params=KnnParams,
             doc="k-NN (cosine) test accuracy on backbone or head features.", fields=KNN_FIELDS)
    register("nccc", lambda p, ctx: Nccc(p), params=ReadoutParams,
             doc="Nearest class-centre test accuracy on backbone or head features.",
             fields=NCCC_FIELDS)
    register("eval_loss", lambda p, ctx: EvalLoss(p), params=EvalLossParams,
             doc="The objective on held-out batches.", fields=EVAL_LOSS_FIELDS)
