"""geobench plugin: mirror maps, the mirror_descent optimizer, exponential-tailed
losses, the mirror-flow metrics (paper P2, implicit bias of mirror flow) and the command
``geobench mirror-figures``."""

from __future__ import annotations

from pydantic import Field

from geobench.hookspecs import hookimpl, lazy
from geobench.params import Params


class HypentropyParams(Params):
    lam: float = Field(..., gt=0, description="scale λ (small: sparse regime; large: near GD)")


class PNormParams(Params):
    p: float = Field(3.0, ge=2, description="exponent p ≥ 2 (horizon degree α = p)")


class ShiftedPNormParams(Params):
    p: float = Field(3.0, ge=2, description="exponent p ≥ 2 (horizon degree α = p)")
    lam: float = Field(..., gt=0, description="scale λ below which R is quadratic")


@hookimpl
def register_commands(cli):
    cli.add("mirror-figures", "effective neuron weights and pruning curves per arm",
            lazy("geobench_mirror.report:arguments"), lazy("geobench_mirror.report:main"))


@hookimpl
def register_mirror_maps(register):
    from geobench.params import EmptyParams
    from geobench_mirror import maps

    def degree(alpha: float | None = None):
        return lambda params: {"horizon_degree": alpha or params.p}

    register("euclidean", lambda params, ctx: maps.euclidean(), params=EmptyParams,
             gives=degree(maps.Euclidean.alpha), doc=maps.Euclidean.__doc__)
    register("hypentropy", lambda params, ctx: maps.hypentropy(params.lam),
             params=HypentropyParams, gives=degree(maps.Hypentropy.alpha),
             doc=maps.Hypentropy.__doc__)
    register("pnorm", lambda params, ctx: maps.pnorm(params.p), params=PNormParams,
             gives=degree(), doc=maps.PNorm.__doc__)
    register("shifted_pnorm", lambda params, ctx: maps.shifted_pnorm(params.p, params.lam),
             params=ShiftedPNormParams, gives=degree(), doc=maps.ShiftedPNorm.__doc__)


@hookimpl
def register_optimizers(register):
    from geobench_mirror.assign import MirrorDescentParams, maps_need
    from geobench_mirror.optimizers import build_mirror_descent

    register("mirror_descent", build_mirror_descent, params=MirrorDescentParams, needs=maps_need,
             doc="mirror descent ∇R(θ⁺) = ∇R(θ) − η∇L with one or per-pattern mirror maps")


@hookimpl
def register_objectives(register):
    from geobench.params import EmptyParams, Need
    from geobench_mirror.objectives import Exponential, Logistic

    labels = [Need(("outputs", "classes"), lambda w, c: (w == 1 and c == 2) or w >= c,
                   "one output for two classes, or an output per class")]
    register("logistic", lambda params, ctx: Logistic(), params=EmptyParams, needs=labels,
             doc="logistic loss of the output f(x) (binary (N,1) or softmax cross-entropy)")
    register("exponential", lambda params, ctx: Exponential(), params=EmptyParams,
             needs=labels,
             doc="exponential loss of the output f(x) (binary or pairwise multiclass)")


def _metric(cls):
    def factory(params, ctx):
        return cls(params)

    return factory


@hookimpl
def register_metrics(register):
    from geobench.params import TEST_SPLIT, TWO_ARMS, MetricParams, has, lacks, same_layouts
    from geobench_mirror.assign import one_degree
    from geobench_mirror.balance import BALANCE_FIELDS, Balance
    from geobench_mirror.distance import DISTANCE_FIELDS, ReferenceDistance
    from geobench_mirror.evaluate import backbone_only
    from geobench_mirror.kkt import KKT_RESIDUAL_FIELDS, KKTParams, KKTResidual
    from geobench_mirror.margins import (
        ALIGNMENT_TIME_FIELDS,
        HORIZON_FIELDS,
        Q_MARGIN_FIELDS,
        AlignmentParams,
        AlignmentTime,
        HorizonMetric,
        MarginParams,
        QMargin,
    )
    from geobench_mirror.neurons import (
        ACTIVE_NEURONS_FIELDS,
        NEURON_HISTOGRAM_FIELDS,
        PRUNING_CURVE_FIELDS,
        SPARSITY_FIELDS,
        ActiveNeurons,
        ActiveParams,
        HistogramParams,
        NeuronHistogram,
        PruningCurve,
        PruningParams,
        Sparsity,
        chained,
    )
    from geobench_mirror.solver_direction import (
        SOLVER_DIRECTION_FIELDS,
        SolverDirection,
        SolverDirectionParams,
    )

    own = "no parameters outside the backbone (identity head without predictor, an objective " \
          "without any)"
    homogeneous = [has("homogeneous", "a homogeneous backbone (no bias, no norm; relu, "
                                      "leaky_relu or identity)"),
                   lacks("extra_params", own), backbone_only(own)]
    degree = one_degree("the horizon degree alpha of every mirror map in use, one for all "
                        "parameters")
    homogeneous.append(degree)
    layered = [has("layered", "a backbone whose weights chain layer to layer (mlp, vgg)"),
               chained("trained weights that chain layer to layer, the head's and the "
                       "objective's included")]
    register("q_margin", _metric(QMargin), params=MarginParams, doc=QMargin.__doc__,
             fields=Q_MARGIN_FIELDS, needs=homogeneous)
    register("horizon", _metric(HorizonMetric), params=MetricParams, doc=HorizonMetric.__doc__,
             fields=HORIZON_FIELDS, needs=[degree])
    register("alignment_time", _metric(AlignmentTime), params=AlignmentParams,
             doc=AlignmentTime.__doc__, fields=ALIGNMENT_TIME_FIELDS, needs=homogeneous)
    register("balance", _metric(Balance), params=MetricParams, doc=Balance.__doc__,
             fields=BALANCE_FIELDS)
    register("distance_to_reference", _metric(ReferenceDistance), params=MetricParams,
             doc=ReferenceDistance.__doc__, fields=DISTANCE_FIELDS,
             needs=[TWO_ARMS, TEST_SPLIT,
                    same_layouts("arms with the reference arm's trainable parameter names "
                                 "and shapes")])
    register("kkt_residual", _metric(KKTResidual), params=KKTParams, doc=KKTResidual.__doc__,
             fields=KKT_RESIDUAL_FIELDS, needs=homogeneous)
    register("max_margin_direction", _metric(SolverDirection), params=SolverDirectionParams,
             doc=SolverDirection.__doc__, fields=SOLVER_DIRECTION_FIELDS, needs=homogeneous)
    register("active_neurons", _metric(ActiveNeurons), params=ActiveParams,
             doc=ActiveNeurons.__doc__, fields=ACTIVE_NEURONS_FIELDS, needs=layered)
    register("sparsity", _metric(Sparsity), params=MetricParams, doc=Sparsity.__doc__,
             fields=SPARSITY_FIELDS, needs=layered)
    register("neuron_histogram", _metric(NeuronHistogram), params=HistogramParams,
             doc=NeuronHistogram.__doc__, fields=NEURON_HISTOGRAM_FIELDS, needs=layered)
    register("pruning_curve", _metric(PruningCurve), params=PruningParams,
             doc=PruningCurve.__doc__, fields=PRUNING_CURVE_FIELDS, needs=[TEST_SPLIT])
