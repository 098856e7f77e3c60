"""What validates, runs: random combinations of the registered components (data, augmentation,
backbone, head, objective, optimizer, one metric, one or two arms, batch 1 or 8) either fail
validation with one line naming the key, or run 2 steps to a complete (or diverged) cell.
The combinations are drawn from a fixed seed, so a failure reproduces."""

import random

import pytest
import yaml

from geobench.cli import main
from geobench.run.store import Store

TRIED = 300  # combinations per run

DATA = [{"name": "gaussian_mixture", "dim": 8, "num_classes": 3},
        {"name": "orbit_manifold", "dim": 8, "num_classes": 3},
        {"name": "student_teacher", "dim": 8},
        {"name": "digits", "size": 8},
        {"name": "digits", "size": 32, "channels": 3}]
AUGMENTS = [{"name": n} for n in ("none", "gaussian_noise", "orbit_action", "simclr", "byol")]
BACKBONES = [{"name": "mlp", "depth": 2, "width": 16},
             {"name": "mlp", "depth": 2, "width": 16, "out_dim": 1, "bias": False},
             {"name": "mlp", "depth": 2, "width": 16, "norm": "batch"},
             {"name": "resnet_tiny", "widths": [8, 8, 8, 8]},
             {"name": "vit_tiny_cpu", "dim": 16, "heads": 2},
             {"name": "homogeneous_vgg16", "width": 0.0625, "hidden": 8}]
HEADS = [{"name": "identity"}, {"name": "linear", "out": 8},
         {"name": "mlp", "hidden": 16, "out": 8},
         {"name": "mlp", "hidden": 16, "out": 8, "norm": "batch"},
         {"name": "identity", "predictor": {"depth": 2, "hidden": 8}}]
OBJECTIVES = ["cl", "simclr", "nscl", "supcon", "ce", "simsiam", "byol", "vicreg",
              "barlow_twins", "dino", "logistic", "exponential"]
OPTIMIZERS = [{"name": "sgd", "lr": 0.01}, {"name": "adam", "lr": 0.001},
              {"name": "adamw", "lr": 0.001}, {"name": "lars", "lr": 0.01}]
METRICS = ["linear_probe", "knn", "nccc", "eval_loss", "effective_rank", "collapse",
           "escape_step", "effective_hessian", "hessian_tracking", "orbit_compression",
           "metric_singularity", "guillotine", "cka", "rsa", "similarity_gap",
           "weight_distance", "alignment_bound", "similarity_descent", "q_margin", "horizon",
           "alignment_time", "balance", "distance_to_reference", "kkt_residual",
           "active_neurons", "sparsity", "neuron_histogram", "pruning_curve"]


def combination(rng: random.Random) -> dict:
    """One suite of a random combination, one cell, 2 steps."""
    data = {**rng.choice(DATA), "n_train": 32, "n_test": 16, "reference_size": 16,
            "batch_size": rng.choice([1, 8])}
    suite = {"name": "combo", "base": {
        "data": data, "augment": rng.choice(AUGMENTS), "backbone": rng.choice(BACKBONES),
        "head": rng.choice(HEADS), "objective": {"name": rng.choice(OBJECTIVES)},
        "optimizer": rng.choice(OPTIMIZERS), "train": {"steps": 2, "device": "cpu"},
        "metrics": [{"name": rng.choice(METRICS)}]}}
    if rng.random() < 0.5:
        suite["arms"] = {"a": {}, "b": {"optimizer": {"lr": 0.002}}}
    return suite


def outcome(suite: dict, tmp_path, capsys) -> str:
    """``refused: <line>`` or the stored cell's status (with its error when failed)."""
    path = tmp_path / "combo.yaml"
    path.write_text(yaml.safe_dump(suite))
    store = tmp_path / "db.sqlite"
    code = main(["run", str(path), "--store", str(store), "--no-leaderboard", "--quiet"])
    captured = capsys.readouterr()
    if code == 2:
        lines = [ln for ln in captured.err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
        assert lines[0].startswith(f"{path}:"), lines[0]
        return "refused: " + lines[0]
    opened = Store(store, read_only=True)
    try:
        (row,) = opened.cells(list(_ids(opened))).values()
    finally:
        opened.close()
    store.unlink()
    return row["status"] + ("" if row["status"] != "failed" else f": {row['error']}")


def _ids(store: Store) -> list[str]:
    return [r[0] for r in store.db.execute("SELECT id FROM cells")]


@pytest.mark.parametrize("index", range(TRIED))
def test_a_combination_is_refused_in_one_line_or_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    suite = combination(random.Random(f"combination {index}"))
    result = outcome(suite, tmp_path, capsys)
    assert result.startswith(("refused: ", "complete", "diverged")), \
        f"{result}\n{yaml.safe_dump(suite)}"


def test_a_base_that_runs_only_through_its_arms_is_valid(tmp_path, capsys):
    """The base's values are checked laid over each arm, but what components need of each
    other is checked on the arms that run: simsiam under a base head without predictor."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "base": {
        "data": {"name": "gaussian_mixture", "dim": 8, "n_train": 64, "batch_size": 16},
        "backbone": {"name": "mlp", "depth": 2, "width": 16}, "head": {"name": "identity"},
        "objective": {"name": "simsiam"}, "optimizer": {"name": "sgd", "lr": 0.1},
        "train": {"steps": 5, "device": "cpu"}}, "arms": {
        "a": {"head": {"name": "mlp", "hidden": 16, "out": 8, "predictor": {"depth": 2}}},
        "b": {"head": {"name": "linear", "out": 8, "predictor": {"depth": 2}}}}}))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


VALID = {  # designs near an edge of a need, which must validate and run
    "vgg_on_8px_digits": {"data": {"name": "digits", "size": 8}, "backbone": {
        "name": "homogeneous_vgg16", "width": 0.0625, "hidden": 8}, "head": {"name": "identity"},
        "objective": {"name": "logistic"}, "metrics": [{"name": "kkt_residual"}]},
    "one_linear_layer_with_batch_norm_unused_at_batch_1": {
        "data": {"name": "gaussian_mixture", "dim": 8, "batch_size": 1},
        "backbone": {"name": "mlp", "depth": 1, "out_dim": 3, "norm": "batch"},
        "objective": {"name": "ce"}},
    "binary_output_on_two_classes": {
        "data": {"name": "student_teacher", "dim": 8},
        "backbone": {"name": "mlp", "depth": 2, "width": 16, "out_dim": 1, "bias": False},
        "objective": {"name": "exponential"}, "metrics": [{"name": "q_margin"}]},
}


@pytest.mark.parametrize("name", list(VALID))
def test_a_design_at_the_edge_of_a_need_runs(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    design = VALID[name]
    base = {"augment": {"name": "none"}, "head": {"name": "identity"},
            "optimizer": {"name": "sgd", "lr": 0.01}, "train": {"steps": 2, "device": "cpu"},
            **design, "data": {"n_train": 32, "n_test": 16, "reference_size": 16,
                               "batch_size": 8, **design["data"]}}
    assert outcome({"name": "edge", "base": base}, tmp_path, capsys) == "complete"


def test_an_unnamed_base_component_is_checked_as_each_arm_reads_it(tmp_path, capsys):
    """``optimizer: {momentum: 0.9}`` in the base, arms naming adam and sgd: adam's arm drops
    the momentum (as the merge does), sgd's keeps it; a value no arm accepts is refused."""
    suite = {"name": "s", "base": {
        "data": {"name": "gaussian_mixture", "dim": 8, "n_train": 64, "batch_size": 16},
        "backbone": {"name": "mlp", "depth": 2, "width": 16}, "objective": {"name": "ce"},
        "optimizer": {"lr": 0.01, "momentum": 0.9}, "train": {"steps": 5, "device": "cpu"}},
        "arms": {"a": {"optimizer": {"name": "adam"}}, "b": {"optimizer": {"name": "sgd"}}}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(suite))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    suite["base"]["optimizer"]["momentum"] = -1.0
    path.write_text(yaml.safe_dump(suite))
    assert main(["validate", str(path)]) == 2
    assert "base.optimizer.momentum" in capsys.readouterr().err
