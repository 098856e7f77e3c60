"""Design-point selection of the alignment figures."""

from geobench_alignment.figures import (
    at_reference,
    batch_points,
    curve_points,
    reference_point,
    sweep_points,
)

from geobench.records import Cell


def _cell(cid, classes=20, tau=0.5, batch=64, scaling="none", dataset="gm", seed=0):
    spec = {"data": {"name": dataset, "classes": classes, "batch_size": batch},
            "objective": {"tau": tau}, "train": {"lr_scaling": scaling, "base_batch_size": 64}}
    arms = {"cl": spec, "nscl": spec, "ce": spec}
    return Cell(cid, "s", "smoke", seed, arms, {})


CELLS = [
    _cell("ref0"), _cell("ref1", seed=1), _cell("c2", classes=2), _cell("c100", classes=100),
    _cell("t1", tau=1.0), _cell("b16l", batch=16, scaling="linear"),
    _cell("b256l", batch=256, scaling="linear"), _cell("b16n", batch=16),
    _cell("dig", dataset="digits", classes=10),
]
FINALS = {c.id: {"cl~nscl/cka.debiased": i / 10, "cl~ce/cka.debiased": -i / 10,
                 "cl~nscl/cka.biased": 9.0} for i, c in enumerate(CELLS)}


def test_reference_point_is_the_most_common_value():
    ref = reference_point(CELLS)
    assert ref == {"dataset": "'gm'", "classes": "20", "tau": "0.5", "batch": "64",
                   "scaling": "'none'"}
    assert at_reference(CELLS[0], ref) and not at_reference(CELLS[2], ref)
    assert at_reference(CELLS[2], ref, ("classes",))


def test_sweeps_hold_the_other_factors_at_reference():
    ref = reference_point(CELLS)
    classes = sweep_points(CELLS, FINALS, ref, "classes")
    assert {k: dict(v) for k, v in classes.items()} == {
        "nscl": {20: [0.0, 0.1], 2: [0.2], 100: [0.3]},
        "ce": {20: [-0.0, -0.1], 2: [-0.2], 100: [-0.3]},
    }
    tau = sweep_points(CELLS, FINALS, ref, "tau")
    assert dict(tau["nscl"]) == {0.5: [0.0, 0.1], 1.0: [0.4]}


def test_batch_lines_share_the_base_batch_point():
    ref = reference_point(CELLS)
    lines = batch_points(CELLS, FINALS, ref, "nscl")
    assert dict(lines["lr linear"]) == {16: [0.5], 256: [0.6], 64: [0.0, 0.1]}
    assert dict(lines["lr none"]) == {16: [0.7], 64: [0.0, 0.1]}


def test_training_curves_at_reference_only():
    ref = reference_point(CELLS)
    cka = "cka.debiased"
    series = [("ref0", "cl~nscl", cka, 0, 1.0), ("ref1", "cl~nscl", cka, 0, 0.8),
              ("c2", "cl~nscl", cka, 0, 0.1), ("ref0", "cl~ce", cka, 5, 0.5),
              ("ref0", "cl~nscl", "cka.biased", 0, 0.6), ("ref0", "cl~nscl", "rsa.value", 0, 0.3)]
    lines = curve_points(CELLS, series, ref)
    assert dict(lines["nscl"]) == {0: [1.0, 0.8]}
    assert dict(lines["ce"]) == {5: [0.5]}
