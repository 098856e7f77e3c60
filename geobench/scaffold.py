"""``geobench new-plugin NAME``: a plugin package that installs and passes its tests as is.

``write_plugin(name, folder)`` writes ``<folder>/<name>/``: a setuptools ``pyproject.toml``
declaring the ``geobench`` entry point, the module ``<module>`` (NAME lower-cased, ``-`` ->
``_``) registering an example head ``<module>_scaled_tanh`` and an example mirror map
``<module>_quadratic``, a smoke suite using both, its tests and a README.
"""

from __future__ import annotations

import keyword
import re
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from importlib.util import find_spec
from pathlib import Path
from string import Template

from geobench.contract.errors import RegistryError
from geobench.contract.plugins import BUILTINS, GROUP

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
MAX_LENGTH = 40  # the generated code keeps to 100-character lines

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$name"
version = "0.1.0"
description = "geobench plugin: an example projection head and mirror map"
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["geobench"]

[project.optional-dependencies]
test = ["pytest"]

[project.entry-points.geobench]
$module = "$module.plugin"

[tool.setuptools.packages.find]
include = ["$module", "$module.*"]

[tool.pytest.ini_options]
testpaths = ["tests"]

[tool.ruff]
line-length = 100
target-version = "py310"

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP"]
"""

INIT = '''\
"""The geobench plugin $name: its hooks are in plugin.py."""
'''

PLUGIN = '''\
"""The hooks of the geobench plugin $name.

They register the head ``${module}_scaled_tanh``
and the mirror map ``${module}_quadratic``.

geobench imports this module through the ``geobench`` entry point of pyproject.toml for
every command, ``--help`` included: keep its top-level imports light (pydantic, geobench's
torch-free modules) and import the implementations, and torch, inside the hooks.
"""

from geobench.hookspecs import hookimpl
from geobench.params import Params
from pydantic import Field


class ScaledTanhParams(Params):
    scale: float = Field(2.0, gt=0, le=100, description="output scale s of s * tanh(z)")


class QuadraticParams(Params):
    a: float = Field(1.0, gt=0, description="curvature a of the potential R = a theta^2 / 2")


@hookimpl
def register_heads(register):
    from $module.heads import ScaledTanh, build_scaled_tanh

    register("${module}_scaled_tanh", build_scaled_tanh,
             params=ScaledTanhParams, doc=ScaledTanh.__doc__)


@hookimpl
def register_mirror_maps(register):
    from $module.maps import Quadratic

    register("${module}_quadratic",
             lambda params, ctx: Quadratic(params.a),
             params=QuadraticParams, doc=Quadratic.__doc__)
'''

HEADS = '''\
"""The example projection head: a factory(params, ctx) -> nn.Module with ``out_dim``, whose
input width is ``ctx.feature_dim`` (the backbone's)."""

from __future__ import annotations

import torch
from geobench.api import BuildContext
from torch import Tensor, nn

from $module.plugin import ScaledTanhParams


class ScaledTanh(nn.Module):
    """h(z) = scale * tanh(z), elementwise (out_dim = feature_dim)."""

    def __init__(self, dim: int, scale: float) -> None:
        super().__init__()
        self.out_dim = dim
        self.scale = scale

    def forward(self, z: Tensor) -> Tensor:
        return self.scale * torch.tanh(z)


def build_scaled_tanh(params: ScaledTanhParams, ctx: BuildContext) -> ScaledTanh:
    if ctx.feature_dim is None:
        raise ValueError("a head needs ctx.feature_dim (build the backbone first)")
    return ScaledTanh(ctx.feature_dim, params.scale)
'''

MAPS = '''\
"""The example mirror map: the weighted quadratic potential R(theta) = a theta^2 / 2.

A mirror map is separable: every method acts elementwise (geobench sums over elements).
grad_Q must be the inverse of grad_R, and Q the convex conjugate of R,
Q(u) = sup_theta theta u - R(theta); tests/test_plugin.py checks both. ``alpha`` and
``horizon`` are optional (see geobench_mirror.maps.MirrorMap), and so is ``grad_Q_into``,
the in-place grad_Q that the mirror_descent optimizer calls (by default a copy of grad_Q).
"""

from __future__ import annotations

import math

import torch
from geobench_mirror.maps import MirrorMap
from torch import Tensor


class Quadratic(MirrorMap):
    """R(theta) = a theta^2 / 2: mirror descent with step lr is gradient descent with lr / a."""

    name = "${module}_quadratic"
    alpha = 2.0  # degree of the horizon function phi_alpha

    def __init__(self, a: float) -> None:
        if not a > 0:
            raise ValueError(f"{self.name} needs a > 0, got {a}")
        self.a = float(a)

    def _params(self) -> dict[str, float]:
        """The parameters in repr(self), which optimizer state dicts record and compare."""
        return {"a": self.a}

    def R(self, theta: Tensor) -> Tensor:
        return 0.5 * self.a * theta * theta

    def grad_R(self, theta: Tensor) -> Tensor:
        return self.a * theta

    def grad_Q(self, u: Tensor) -> Tensor:
        return u / self.a

    def Q(self, u: Tensor) -> Tensor:
        return 0.5 * u * u / self.a

    def horizon(self, theta: Tensor) -> Tensor:
        """phi_2(theta) = sqrt(a) ||theta||_2 for the whole tensor."""
        return math.sqrt(self.a) * torch.linalg.vector_norm(theta)
'''

SUITE = """\
name: ${module}_example
description: >-
  Example suite of the $name plugin on the 8x8 digits: its head ${module}_scaled_tanh
  (arm tanh) and its mirror map ${module}_quadratic under mirror_descent (arm quadratic)
  against gradient descent with the identity head (arm gd). Softmax cross-entropy on the
  network output.
base:
  data: {name: digits, size: 8, n_train: 256, n_test: 128, batch_size: 64,
         reference_size: 32}
  backbone: {name: mlp, depth: 2, width: 32, out_dim: 10}
  head: {name: identity}
  objective: {name: logistic}
  optimizer: {name: mirror_descent, lr: 0.1, mirror_map: {name: euclidean}}
  train: {steps: 100, device: cpu}
  metrics:
    - {name: eval_loss}
    - {name: horizon}
arms:
  gd: {}
  tanh: {head: {name: ${module}_scaled_tanh, scale: 3.0}}
  quadratic: {optimizer: {mirror_map: {name: ${module}_quadratic, a: 2.0}}}
seeds: 2
profiles:
  smoke: {}
  full: {base: {data: {n_train: null, n_test: null}, train: {steps: 2000}}, seeds: 5}
leaderboard:
  rows: [arm]
  metrics:
    - {key: loss.train, label: train loss, fmt: .3g}
    - {key: eval_loss.value, label: held-out loss, fmt: .3g}
    - {key: horizon.closed, label: horizon, fmt: .3g}
"""

TESTS = '''\
"""Tests of the geobench plugin $name.

Its components are registered under its distribution, the mirror map is consistent, and the
example suite validates and runs.
"""

from importlib.metadata import distribution
from pathlib import Path

import pytest
import torch
from geobench.api import BuildContext
from geobench.cli import main
from geobench.plugins import registry
from geobench.suite import expand, load_suite
from pydantic import ValidationError

from $module.maps import Quadratic

HEAD = "${module}_scaled_tanh"
MAP = "${module}_quadratic"
SUITE = Path(__file__).resolve().parents[1] / "suites" / "example.yaml"
CTX = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=8)
THETA = torch.linspace(-5.0, 5.0, 41, dtype=torch.float64)
CURVATURES = [0.5, 1.0, 4.0]


def test_components_are_registered_by_this_distribution():
    dist = distribution("$name").name
    origin = f"$module ({dist})"
    assert registry().get("heads", HEAD).origin == origin
    assert registry().get("mirror_maps", MAP).origin == origin


def test_head_keeps_the_width_and_bounds_the_output():
    head = registry().build("heads", {"name": HEAD, "scale": 3.0}, CTX)
    out = head(torch.linspace(-100.0, 100.0, 32).view(4, 8))
    assert head.out_dim == 8
    assert out.shape == (4, 8)
    assert out.abs().max() <= 3.0


def test_params_are_validated():
    with pytest.raises(ValidationError):
        registry().validate("heads", {"name": HEAD, "scale": 0})
    with pytest.raises(ValidationError):
        registry().validate("mirror_maps", {"name": MAP, "a": -1.0})


@pytest.mark.parametrize("a", CURVATURES)
def test_grad_Q_inverts_grad_R(a):
    m = Quadratic(a)
    torch.testing.assert_close(m.grad_Q(m.grad_R(THETA)), THETA)
    torch.testing.assert_close(m.grad_R(m.grad_Q(THETA)), THETA)


@pytest.mark.parametrize("a", CURVATURES)
def test_Q_is_the_convex_conjugate_of_R(a):
    """Q(u) = sup_theta theta u - R(theta), the sup over a grid holding every maximiser."""
    m = Quadratic(a)
    u = torch.linspace(-2.0, 2.0, 21, dtype=torch.float64)
    grid = torch.linspace(-10.0, 10.0, 100_001, dtype=torch.float64)
    sup = (u[:, None] * grid - m.R(grid)).max(dim=1).values
    torch.testing.assert_close(m.Q(u), sup, rtol=0.0, atol=1e-6)
    fenchel_young = THETA * m.grad_R(THETA) - m.R(THETA)
    torch.testing.assert_close(m.Q(m.grad_R(THETA)), fenchel_young)


def test_horizon_is_the_small_step_limit():
    m, eta = Quadratic(2.0), 1e-3
    limit = eta * (m.alpha * m.Q(m.grad_R(THETA / eta)).sum()) ** (1.0 / m.alpha)
    torch.testing.assert_close(m.horizon(THETA), limit)


def test_example_suite_validates_and_uses_both_components():
    cells = expand(load_suite(SUITE), registry(), "smoke")
    arms = cells[0].arms
    assert arms["tanh"]["head"]["name"] == HEAD
    spec = arms["quadratic"]["optimizer"]["mirror_map"]
    assert registry().build("mirror_maps", spec, CTX) == Quadratic(spec["a"])


def test_example_suite_runs(tmp_path):
    store = tmp_path / "results.sqlite"
    assert main(["run", str(SUITE), "--store", str(store), "--quiet", "--no-leaderboard"]) == 0
'''

README = """\
# $name

A geobench plugin. It registers, through the `geobench` entry point `$module` in
`pyproject.toml`:

- the projection head `${module}_scaled_tanh` (h(z) = scale * tanh(z)),
- the mirror map `${module}_quadratic` (R(theta) = a theta^2 / 2), usable by the
  `mirror_descent` optimizer as `mirror_map: {name: ${module}_quadratic, a: 2.0}`.

## Install and check

```bash
pip install -e .                          # or pip install -e ".[test]" for pytest
geobench list heads                       # ${module}_scaled_tanh  [$module ($name) 0.1.0]
geobench list mirror_maps                 # ${module}_quadratic
geobench validate suites/example.yaml
pytest
```

`geobench run suites/example.yaml` trains the example suite on the CPU (well under a minute) and
writes its leaderboard to `results/leaderboards/${module}_example.md`.

## Layout

| file | what it is |
|---|---|
| `pyproject.toml` | the package and its `[project.entry-points.geobench]` entry point |
| `$module/plugin.py` | the hooks `register_heads`, `register_mirror_maps` and the params |
| `$module/heads.py` | the head and its factory `build_scaled_tanh(params, ctx)` |
| `$module/maps.py` | the mirror map, a `geobench_mirror.maps.MirrorMap` |
| `suites/example.yaml` | a smoke suite using both components |
| `tests/test_plugin.py` | registration, mirror-map consistency, the suite validates and runs |
"""

FILES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "$module/__init__.py": INIT,
    "$module/plugin.py": PLUGIN,
    "$module/heads.py": HEADS,
    "$module/maps.py": MAPS,
    "suites/example.yaml": SUITE,
    "tests/test_plugin.py": TESTS,
}


def module_name(name: str) -> str:
    """The plugin's module and entry-point name: NAME lower-cased, ``-`` -> ``_``."""
    return name.lower().replace("-", "_")


def check_name(name: str) -> str:
    """The module name of plugin ``name``; ``RegistryError`` (one line) if the name is not
    allowed or its module, entry point or distribution already exists."""
    if not NAME.fullmatch(name) or len(name) > MAX_LENGTH:
        raise RegistryError(f"plugin name {name!r}: a letter, then letters, digits, '_' or '-', "
                            f"at most {MAX_LENGTH} characters (e.g. my-plugin)")
    module = module_name(name)
    if keyword.iskeyword(module):
        raise RegistryError(f"plugin name {name!r}: module name {module!r} is a Python keyword")
    if module in {path.split("/")[0] for path in FILES if "/" in path}:
        raise RegistryError(f"plugin name {name!r}: {module!r} is a folder of the package "
                            "(its tests or suites); choose another name")
    taken = {ep.name for ep in entry_points(group=GROUP)} | set(BUILTINS)
    if module in taken:
        raise RegistryError(f"plugin name {name!r}: a geobench plugin {module!r} already "
                            f"exists; plugins taken: {', '.join(sorted(taken))}")
    if find_spec(module) is not None:
        raise RegistryError(f"plugin name {name!r}: a module {module!r} is already "
                            "importable; choose another name")
    try:
        distribution(name)
    except PackageNotFoundError:
        return module
    raise RegistryError(f"plugin name {name!r}: a distribution of that name is already "
                        "installed; choose another name")


def write_plugin(name: str, folder: str | Path = ".") -> Path:
    """Write the plugin package ``<folder>/<name>/`` and return its path; nothing is written
    if ``name`` is refused or ``<folder>/<name>`` is a non-empty folder (``RegistryError``)."""
    module = check_name(name)
    target = Path(folder) / name
    for path in (Path(folder), target):
        if path.exists() and not path.is_dir():
            raise RegistryError(f"{path} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        raise RegistryError(f"{target} exists and is not empty; choose another name or folder")
    values = {"name": name, "module": module}
    for path, text in FILES.items():
        out = target / Template(path).substitute(values)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(Template(text).substitute(values), encoding="utf-8")
    return target
