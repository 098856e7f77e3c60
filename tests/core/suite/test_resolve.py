"""One grid point resolved (geobench.suite.resolve): records with every default filled in,
typed specs, code versions, nested components, and errors traced to where the file wrote the
value. The components are this file's own, registered by hand."""

import math
from typing import Annotated, Any

import pytest
from pydantic import Field

from geobench.contract.param_models import DataParams, MetricParams, Nested, Params
from geobench.contract.registry import EmptyParams, Entry, Registry
from geobench.contract.spec import Component
from geobench.suite.load import load_suite
from geobench.suite.merge import accepts_of, profile_view
from geobench.suite.resolve import resolve_cell
from geobench.suite.yamlio import SuiteError
from geobench.version import __version__


class WidthParams(Params):
    width: int = Field(4, ge=1)


class SGDParams(Params):
    lr: float = Field(0.1, gt=0)


class MapParams(Params):
    p: int = 4


class MirrorParams(SGDParams):
    maps: Annotated[dict[str, Any] | None, Nested("mirror_maps")] = None


def _registry() -> Registry:
    reg = Registry()
    for kind, name, params in [
            ("datasets", "d", DataParams), ("augmentations", "none", EmptyParams),
            ("backbones", "b", WidthParams), ("heads", "identity", EmptyParams),
            ("objectives", "o", EmptyParams), ("optimizers", "sgd", SGDParams),
            ("optimizers", "md", MirrorParams), ("metrics", "m", MetricParams)]:
        reg.add(Entry(kind, name, lambda p, c: None, params, "", "p (dist)", "1.0"))
    reg.add(Entry("mirror_maps", "quartic", lambda p, c: None, MapParams, "", "maps (m)", "2.0"))
    return reg


SUITE = """\
name: s
base:
  data: {name: d, n_train: 64, batch_size: 8}
  backbone: {name: b}
  objective: {name: o}
  optimizer: {name: sgd}
  train: {steps: 3}
  metrics: [{name: m}, {name: m, id: again, every: 2}]
grid:
  optimizer.lr: [0.5, -1.0]
"""


def _resolve(tmp_path, text=SUITE, assignment=(), arms_text="", reg=None):
    path = tmp_path / "s.yaml"
    path.write_text(text + arms_text)
    loaded = load_suite(path)
    reg = reg or _registry()
    view = profile_view(loaded, "smoke", None, accepts_of(reg))
    return resolve_cell(loaded, reg, view, list(assignment), accepts_of(reg)), str(path)


def test_the_record_has_every_default_and_the_typed_spec_the_same_values(tmp_path):
    (arms, specs, versions), _ = _resolve(tmp_path, assignment=[
        ("optimizer.lr", 0.5, ("grid", "optimizer.lr", 0))])
    record = arms["main"]
    assert record["data"] == {"name": "d", "n_train": 64, "n_test": None, "classes": None,
                              "reference_size": 256, "batch_size": 8}
    assert record["augment"] == {"name": "none"} and record["head"] == {"name": "identity"}
    assert record["backbone"] == {"name": "b", "width": 4}
    assert record["optimizer"] == {"name": "sgd", "lr": 0.5}
    assert record["metrics"] == [{"name": "m", "id": "m", "every": None},
                                 {"name": "m", "id": "again", "every": 2}]
    assert "replicate" not in record and record["init"] is None and record["tags"] == {}
    assert versions == {"geobench": __version__, "p (dist)": "1.0"}
    spec = specs["main"]
    assert spec.optimizer == Component("sgd", SGDParams(lr=0.5))
    assert spec.backbone.params == WidthParams() and spec.init is None
    assert [m.id for m in spec.metrics] == ["m", "again"] and spec.train.steps == 3


def test_nested_components_are_validated_and_filled_in(tmp_path):
    text = SUITE.replace("optimizer: {name: sgd}", "optimizer: {name: md, maps: {name: quartic}}")
    (arms, specs, versions), _ = _resolve(tmp_path, text)
    assert arms["main"]["optimizer"] == {"name": "md", "lr": 0.1,
                                         "maps": {"name": "quartic", "p": 4}}
    assert specs["main"].optimizer.params.maps == {"name": "quartic", "p": 4}
    assert versions["maps (m)"] == "2.0"
    bad = text.replace("{name: quartic}", "{name: quartc}")
    with pytest.raises(SuiteError, match=r"s.yaml:6: base.optimizer.maps.name: 'quartc' is not "
                                         r"a registered mirror_map \(did you mean 'quartic'\?\)"):
        _resolve(tmp_path, bad)
    with pytest.raises(SuiteError, match="base.optimizer.maps: a nested component is a "
                                         "mapping with 'name'"):
        _resolve(tmp_path, text.replace("{name: quartic}", "{x: 3}"))


def test_a_replicate_is_recorded_only_when_set(tmp_path):
    arms_text = "arms:\n  a: {}\n  b: {replicate: 2}\n"
    (arms, specs, _), _ = _resolve(tmp_path, arms_text=arms_text)
    assert "replicate" not in arms["a"] and arms["b"]["replicate"] == 2
    assert (specs["a"].replicate, specs["b"].replicate) == (0, 2)


def test_errors_point_where_the_value_was_written(tmp_path):
    with pytest.raises(SuiteError) as info:
        _resolve(tmp_path, assignment=[("optimizer.lr", -1.0, ("grid", "optimizer.lr", 1))])
    path = tmp_path / "s.yaml"
    assert str(info.value) == (f"{path}:10: grid.optimizer.lr[1]: Input should be greater "
                               "than 0 (got -1.0)")
    with pytest.raises(SuiteError, match=r"s.yaml:4: base.backbone.width: Input should be "):
        _resolve(tmp_path, SUITE.replace("{name: b}", "{name: b, width: 0}"))
    with pytest.raises(SuiteError, match=r"s.yaml:14: arms.a.optimizer.lr: "):
        _resolve(tmp_path, arms_text="arms:\n  b: {}\n  a:\n    optimizer: {lr: 0}\n")
    with pytest.raises(SuiteError, match=r"grid.optimizer.lr\[0\]: must be a finite number"):
        _resolve(tmp_path, assignment=[("optimizer.lr", math.nan, ("grid", "optimizer.lr", 0))])


def test_metric_ids_are_unique_within_an_arm(tmp_path):
    twice = SUITE.replace("{name: m, id: again, every: 2}", "{name: m, every: 2}")
    with pytest.raises(SuiteError, match=r"s.yaml:8: base.metrics\[1\].id: metric id 'm' is "
                                         r"used twice \(metrics\[0\] too\)"):
        _resolve(tmp_path, twice)
    with pytest.raises(SuiteError, match="metric id 'a b': ids match"):
        _resolve(tmp_path, SUITE.replace("id: again", "id: a b"))


def test_arms_share_data_augment_and_train(tmp_path):
    arms_text = "arms:\n  a: {}\n  b: {data: {n_train: 32}}\n"
    with pytest.raises(SuiteError, match=r"s.yaml:13: arms.b.data: arms train in lockstep and "
                                         r"must share 'data'"):
        _resolve(tmp_path, arms_text=arms_text)


class LoopParams(Params):
    inner: Annotated[dict[str, Any] | None, Nested("mirror_maps")] = {"name": "loop"}


def test_defaults_that_nest_a_component_in_itself_are_refused(tmp_path):
    reg = _registry()
    reg.add(Entry("mirror_maps", "loop", lambda p, c: None, LoopParams, "", "maps (m)", "2.0"))
    text = SUITE.replace("optimizer: {name: sgd}", "optimizer: {name: md, maps: {name: loop}}")
    with pytest.raises(SuiteError, match=r"base.optimizer.maps.inner.inner.inner.inner.inner."
                                         r"inner.inner: components nested more than 8 "
                                         r"deep: optimizer 'md' > mirror_map 'loop' > "):
        _resolve(tmp_path, text, reg=reg)
