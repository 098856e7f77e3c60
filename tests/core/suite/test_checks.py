"""Checks beyond the schema (geobench.suite.checks), each a one-line ``SuiteError`` at the
key: run-spec keys, arms, claims, excludes, leaderboard keys, executor and loggers, result
keys, finite numbers and dataset sizes."""

import math
from types import SimpleNamespace

import pytest

from geobench.claims import validate as claim_checks
from geobench.contract.manager import registry
from geobench.records import Cell
from geobench.suite import checks
from geobench.suite.load import LoadedSuite
from geobench.suite.schema import Suite
from geobench.suite.yamlio import SuiteError


def _loaded(**suite) -> LoadedSuite:
    return LoadedSuite("s.yaml", Suite.model_validate({"name": "s", "base": {}, **suite}), {})


def _refused(check, *args, where: str, words: str) -> None:
    with pytest.raises(SuiteError) as info:
        check(*args)
    assert str(info.value).startswith(f"s.yaml: {where}: ") and words in str(info.value), \
        str(info.value)


def test_keys_are_run_spec_keys_or_arm_keys():
    loaded = _loaded(arms={"a": {}, "b": {}})
    for key in ("optimizer.lr", "tags.x", "arms.a.optimizer.lr", "train"):
        checks.check_key(loaded, ("grid", key), key, loaded.suite.arms)
    checks.check_key(loaded, ("x",), "trial_seed", {}, extra=("trial_seed",))
    _refused(checks.check_key, loaded, ("grid", "optimiser.lr"), "optimiser.lr", {},
             where="grid.optimiser.lr", words="'optimiser.lr' is not a run-spec key (did you "
                                              "mean 'optimizer'?); keys start with one of: data,")
    _refused(checks.check_key, loaded, ("grid", "arms.c.x"), "arms.c.x", loaded.suite.arms,
             where="grid.arms.c.x", words="unknown arm 'c'; arms: a, b")


def test_claims_name_known_arms_and_keys():
    claim = {"id": "c", "statement": "s", "expect": "> 0"}
    single = _loaded(claims=[{**claim, "metric": "x/m.f"}])
    _refused(claim_checks.check_names, single, where="claims[0]",
             words="claim 'c' names arm 'x'; arms: main")
    arms = {"a": {}, "b": {}}
    unnamed = _loaded(arms=arms, claims=[{**claim, "metric": "m.f"}])
    _refused(claim_checks.check_names, unnamed, where="claims[0].metric",
             words="the suite has arms (a, b); name one as '<arm>/m.f'")
    union = _loaded(arms=arms, claims=[{**claim, "metric": "m.f",
                                        "where": [{"arm": "a"}, {"tags.x": 1}]}])
    _refused(claim_checks.check_names, union, where="claims[0].where[1]",
             words="name the arm in every map of 'where'")
    key = _loaded(claims=[{**claim, "metric": "m.f", "where": {"optimzer.lr": 1}}])
    _refused(claim_checks.check_names, key, where="claims[0].where.optimzer.lr",
             words="not a run-spec key")
    part = _loaded(claims=[{**claim, "metric": "m.f", "also": [
        {"metric": "m.g", "expect": "a < b", "compare": {"key": "optimzer.lr", "a": 1, "b": 2}}]}])
    _refused(claim_checks.check_names, part, where="claims[0].also[0].compare.key",
             words="not a run-spec key")
    claim_checks.check_names(_loaded(arms=arms, claims=[{**claim, "metric": "a/m.f"}]))


def test_profile_arms_excludes_and_leaderboard_keys():
    _refused(checks.check_structure, _loaded(arms={"a": {}, "b": {}},
                                             profiles={"full": {"arms": {"c": {}}}}),
             where="profiles.full.arms.c", words="unknown arm 'c'; arms: a, b")
    _refused(checks.check_excludes, _loaded(exclude=[{}]), where="exclude[0]",
             words="an exclude entry needs at least one key")
    _refused(checks.check_excludes, _loaded(profiles={"p": {"exclude": [{"tag.x": 1}]}}),
             where="profiles.p.exclude[0].tag.x", words="not a run-spec key")
    checks.check_structure(_loaded(leaderboard={"rows": ["arm", "optimizer.lr"],
                                                "columns": "trial_seed"}))
    _refused(checks.check_structure, _loaded(leaderboard={"rows": ["lr"]}),
             where="leaderboard.rows[0]", words="'lr' is not a run-spec key")


def test_the_executor_and_loggers_are_registered_with_valid_params():
    reg = registry()
    checks.check_components(_loaded(executor={"name": "pool", "workers": 2},
                                    loggers=["tensorboard"]), reg)
    _refused(checks.check_components, _loaded(executor={"name": "locl"}), reg,
             where="executor.name", words="'locl' is not a registered executor (did you mean "
                                          "'local'?)")
    _refused(checks.check_components, _loaded(executor={"workers": 2}), reg, where="executor",
             words="an executor is a mapping with 'name' (one of: local, pool, ray, slurm)")
    _refused(checks.check_components, _loaded(executor={"name": "pool", "workers": 0}), reg,
             where="executor.workers", words="greater than or equal to 1")
    _refused(checks.check_components, _loaded(loggers=["tensorboard", "tensorboard"]), reg,
             where="loggers[1].name", words="logger 'tensorboard' is listed twice")


def _cell(metrics) -> Cell:
    return Cell("0" * 16, "s", "smoke", 0, {"main": {"metrics": metrics}}, {})


def test_result_keys_name_a_measured_metric_and_a_declared_field():
    reg, loaded = registry(), _loaded()
    specs = checks.measured([_cell([{"name": "nccc", "id": "probe"},
                                    {"name": "knn", "id": "knn"}])])
    assert specs == {"probe": "nccc", "knn": "knn"}
    for key in ("loss.train", "probe.accuracy", "a/knn.accuracy"):
        checks.check_result_key(loaded, reg, ("k",), key, specs, "here", "claim 'c'")
    _refused(checks.check_result_key, loaded, reg, ("k",), "prob.accuracy", specs, "here",
             "claim 'c'", where="k", words="claim 'c': no metric with id 'prob' in here (did you "
                                           "mean 'probe'?); ids: probe, knn (and loss.train)")
    _refused(checks.check_result_key, loaded, reg, ("k",), "probe.acc", specs, "here", "x",
             where="k", words="x: metric 'nccc' has no field 'acc'")


def test_non_finite_finds_the_first_nan_or_infinity():
    assert checks.non_finite({"a": [1, 2.5, {"b": -math.inf}], "c": math.nan}) == ("a", 2, "b")
    assert checks.non_finite((0.0, math.nan)) == (1,)
    assert checks.non_finite({"a": [1, "nan", None, 10**400]}) is None


def _fail(path, message):
    return SuiteError(f"{'.'.join(map(str, path))}: {message}")


@pytest.mark.parametrize("params, words", [
    ({"n_train": 10, "batch_size": 11}, "data.batch_size: batch_size 11 exceeds n_train 10"),
    ({"classes": 4, "num_classes": 3}, "data.classes: classes 4 is not between 1 and "
                                       "num_classes (3)"),
    ({"classes": 0, "num_classes": 3}, "classes 0 is not between 1"),
    ({"classes": [0, 3], "num_classes": 3}, "data.classes: class ids [0, 3] are not all in 0..2"),
])
def test_dataset_sizes_from_params_alone(params, words):
    full = {"n_train": None, "batch_size": 8, "classes": None, "num_classes": None, **params}
    with pytest.raises(SuiteError, match=words.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)").replace("]", r"\]")):
        checks.check_data(SimpleNamespace(**full), _fail)


def test_dataset_sizes_that_pass():
    for params in ({"n_train": 10, "batch_size": 10}, {"n_train": None, "batch_size": 10**6},
                   {"classes": [0, 2], "num_classes": 3}, {"classes": 9}):  # no num_classes
        checks.check_data(SimpleNamespace(**params), _fail)


def test_leaderboard_tables_labels_and_plot_x_keys():
    board = {"metrics": [{"key": "m.f"}], "labels": {"arm": "loss", "tags.x": "x"},
             "plots": [{"key": "m.f", "x": "optimizer.lr"}],
             "tables": [{"title": "T", "rows": ["tags.x", "arm"],
                         "where": {"arm": ["a", "b"], "trial_seed": 0, "tags.y": [1]}},
                        {"title": "U", "where": {"arm": "b"}}]}
    checks.check_structure(_loaded(arms={"a": {}, "b": {}}, leaderboard=board))
    _refused(checks.check_structure,
             _loaded(arms={"a": {}, "b": {}}, leaderboard={**board, "tables": [
                 {"title": "T", "where": {"arm": "c"}}]}),
             where="leaderboard.tables[0].where.arm", words="table 'T' names arm 'c'; arms: a, b")
    _refused(checks.check_structure, _loaded(leaderboard={**board, "labels": {"lr": "x"}}),
             where="leaderboard.labels.lr", words="'lr' is not a run-spec key")
