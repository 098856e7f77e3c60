"""An arm's parameter layout, built without training: backbone, head and objective built as
the engine builds them, on the meta device (shapes only, no memory, no numbers), for a
batch of two samples of the data's ``input_shape``, and the batch's features and head
outputs computed.
What cannot be built for that data (a timm model whose strides leave nothing of small
images, ``cifar_stem`` on a model without a ResNet stem, a checkpoint that does not fit)
fails here, at validation, with the builder's own message. The facts ``layout`` and
``layouts`` (``contract.layout``) hold the result."""

from __future__ import annotations

import json
import warnings

from geobench.contract.layout import Layout, Shape
from geobench.contract.registry import Registry
from geobench.contract.spec import ArmSpec

_CACHE: dict[int, tuple[Registry, dict[str, Layout]]] = {}


def arm_layout(registry: Registry, spec: ArmSpec, input_shape: Shape, classes: int
               ) -> Layout:
    """The layout of the arm ``spec`` for samples of ``input_shape`` and ``classes`` classes
    (cached per registry and what the build depends on)."""
    key = json.dumps([input_shape, classes] + [
        [c.name, c.params.model_dump(mode="json")] for c in (spec.backbone, spec.head,
                                                              spec.objective)], default=str)
    if _CACHE.get(id(registry), (None,))[0] is not registry:
        _CACHE[id(registry)] = (registry, {})
    cache = _CACHE[id(registry)][1]
    if key not in cache:
        cache[key] = _build(registry, spec, input_shape, classes)
    return cache[key]


def _build(registry: Registry, spec: ArmSpec, input_shape: Shape, classes: int) -> Layout:
    import torch

    from geobench.contract.api import Arm, BuildContext, Data

    meta = torch.device("meta")
    n = 2  # shapes do not depend on the batch size; two samples for batch norm
    x, y = torch.empty(n, *input_shape, device=meta), torch.zeros(n, dtype=torch.long,
                                                                    device=meta)
    data = Data(x, y, x, y, x, y, num_classes=classes, batch_size=n)
    ctx = BuildContext(seed=0, device=meta, data=data, registry=registry,
                       spec={"data": {"name": spec.data.name}})
    try:
        with meta, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            backbone = registry.create("backbones", spec.backbone, ctx)
            ctx.feature_dim = backbone.feature_dim
            head = registry.create("heads", spec.head, ctx)
            ctx.embed_dim = getattr(head, "out_dim", ctx.feature_dim)
            objective = registry.create("objectives", spec.objective, ctx)
            arm = Arm(backbone, head, objective)
            arm.embed(x)
    except Exception as exc:  # the builder's own message, as the run would fail with it
        return Layout(error=_one_line(exc))
    return Layout(tuple((name, tuple(p.shape), p.requires_grad)
                        for name, p in arm.named_parameters()))


def _one_line(exc: BaseException) -> str:
    """``exc`` as one line: its message's lines joined (at most 300 characters)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    text = text or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
