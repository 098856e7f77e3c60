"""``geobench analyze``: orbit compression and metric singularity of a trained checkpoint.

Example (component specs are inline YAML, as in a suite)::

    geobench analyze --data '{name: orbit_manifold}' --augment '{name: orbit_action}' \\
        --backbone '{name: mlp, depth: 2, width: 64}' --head '{name: mlp, out: 32}' \\
        --objective '{name: vicreg}' --checkpoint arm.pt

The checkpoint is a ``state_dict`` (``torch.save``, loaded with ``weights_only=True``, or
``.safetensors``), optionally nested under ``--section`` (e.g. ``teacher`` in DINO's
files).  Backbone weights are the keys under ``--backbone-prefix`` (default ``backbone.``),
head weights those under ``--head-prefix`` (``head.``), objective state (DINO prototypes,
EMA targets) those under ``objective.`` -- the layout of a saved ``geobench.api.Arm``.
``orbit_compression`` always runs; ``metric_singularity`` needs ``--objective`` (the loss
defines the metric G).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
import yaml
from tabulate import tabulate

from geobench.api import Arm, BuildContext, MetricContext, Objective, batches
from geobench.plugins import registry
from geobench_projection.metrics.orbit import OrbitCompression, OrbitParams
from geobench_projection.metrics.singularity import MetricSingularity, SingularityParams


def _spec(text: str) -> dict[str, Any]:
    value = yaml.safe_load(text)
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict) or "name" not in value:
        raise argparse.ArgumentTypeError(f"expected a component spec like '{{name: mlp}}', "
                                         f"got {text!r}")
    return value


def arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``geobench analyze``."""
    ap.description = __doc__.split("\n")[0]
    ap.add_argument("--data", type=_spec, required=True, help="dataset spec")
    ap.add_argument("--augment", type=_spec, default={"name": "none"}, help="augmentation spec")
    ap.add_argument("--backbone", type=_spec, required=True, help="backbone spec")
    ap.add_argument("--head", type=_spec, default={"name": "identity"}, help="head spec")
    ap.add_argument("--objective", type=_spec, help="objective spec (for metric_singularity)")
    ap.add_argument("--init", type=_spec, help="init spec the checkpoint was trained with")
    ap.add_argument("--checkpoint", type=Path, required=True, help="state_dict file")
    ap.add_argument("--section", help="key of the state_dict inside the checkpoint")
    ap.add_argument("--backbone-prefix", default="backbone.", help="backbone key prefix")
    ap.add_argument("--head-prefix", default="head.", help="head key prefix")
    ap.add_argument("--samples", type=int, default=128, help="samples whose orbits are drawn")
    ap.add_argument("--views", type=int, default=8, help="views per orbit")
    ap.add_argument("--seed", type=int, default=0, help="seed of data, views and directions")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--json", action="store_true", help="print one JSON object")


def load_state(path: Path, section: str | None) -> dict[str, torch.Tensor]:
    """The state_dict in ``path`` (``.safetensors`` or a torch file), under ``section``."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state: Any = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    if section is not None:
        state = state[section]
    return state


def _part(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def build_arm(args: argparse.Namespace) -> tuple[Arm, Any, Any]:
    """Data, augmentation and the arm with the checkpoint's weights loaded."""
    reg = registry()
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    data = reg.build("datasets", args.data, BuildContext(args.seed, torch.device("cpu")))
    data = data.to(device)
    augment = reg.build("augmentations", args.augment, BuildContext(args.seed, device, data))
    ctx = BuildContext(args.seed, device, data)
    backbone = reg.build("backbones", args.backbone, ctx)
    ctx.feature_dim = backbone.feature_dim
    head = reg.build("heads", args.head, ctx)
    ctx.embed_dim = getattr(head, "out_dim", ctx.feature_dim)
    objective = (reg.build("objectives", args.objective, ctx) if args.objective is not None
                 else Objective())
    arm = Arm(backbone, head, objective).to(device)
    if args.init is not None:
        reg.build("inits", args.init, ctx)(arm, data)
    objective.setup(arm)
    state = load_state(args.checkpoint, args.section)
    arm.backbone.load_state_dict(_part(state, args.backbone_prefix))
    head_state = _part(state, args.head_prefix)
    if head_state or list(arm.head.state_dict()):
        arm.head.load_state_dict(head_state)
    arm.objective.load_state_dict(_part(state, "objective."), strict=False)
    return arm.eval(), data, augment


def analyze(args: argparse.Namespace) -> dict[str, float]:
    """Run the metrics on the loaded arm and return ``{metric.field: value}``."""
    arm, data, augment = build_arm(args)
    batch = next(iter(batches(data, args.seed, 1)))
    gen = torch.Generator().manual_seed(args.seed)
    views = [augment(batch.x, batch.index, gen, view=v) for v in range(2)]
    ctx = MetricContext(step=0, total_steps=0, arm_name="checkpoint", arm=arm, data=data,
                        batch=batch, views=views, augmentation=augment, generator=gen,
                        spec={})
    out = {f"orbit_compression.{k}": v for k, v in
           OrbitCompression(OrbitParams(samples=args.samples, views=args.views))(ctx).items()}
    if args.objective is not None:
        single = MetricSingularity(SingularityParams(samples=min(args.samples, 16)))(ctx)
        out.update({f"metric_singularity.{k}": v for k, v in single.items()})
    return out


def main(args: argparse.Namespace) -> int:
    """Entry point of ``geobench analyze``; returns the exit status."""
    try:
        values = analyze(args)
    except (FileNotFoundError, KeyError, RuntimeError, ValueError) as exc:
        print(f"geobench analyze: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(values))
    else:
        print(tabulate(sorted(values.items()), headers=["quantity", "value"], floatfmt=".4g"))
    return 0
