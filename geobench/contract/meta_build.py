"""An arm's parameter layout, built without training: backbone, head, objective and init
built as the engine builds them, on the meta device (shapes only, no memory, no numbers),
for a batch of two samples of the data's ``input_shape``, and the batch's features and head
outputs computed.
What cannot be built for that data (a timm model whose strides leave nothing of small
images, ``cifar_stem`` on a model without a ResNet stem, a checkpoint that does not fit)
fails here, at validation, with the builder's own message. The facts ``layout`` and
``layouts`` (``contract.layout``) hold the result."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

from geobench.contract.layout import Layout, Shape
from geobench.contract.registry import Registry
from geobench.contract.spec import ArmSpec, Component

_CACHE: dict[int, tuple[Registry, dict[str, Any]]] = {}


def _key(*parts: Any) -> str:
    """JSON of ``parts``: a component as its name and params, with the size and time of any
    file a string param names (a checkpoint rewritten in place is read again)."""
    def part(p: Any) -> Any:
        if not isinstance(p, Component):
            return p
        params = p.params.model_dump(mode="json")
        files = [os.stat(v)[6:9] for v in params.values()
                 if isinstance(v, str) and os.path.isfile(v)]
        return [p.name, params, files]

    return json.dumps([part(p) for p in parts], default=str)


def arm_layout(registry: Registry, spec: ArmSpec, input_shape: Shape, classes: int
               ) -> Layout | None:
    """The layout of the arm ``spec`` for samples of ``input_shape`` and ``classes`` classes;
    None where an objective or init cannot be built on the meta device, or the network
    fails only for the meta device's limits (the layout is unknown). Cached per registry:
    the network (backbone and head, with its forward pass) per data, input shape, classes
    and their specs; the whole arm per objective and init."""
    if _CACHE.get(id(registry), (None,))[0] is not registry:
        _CACHE[id(registry)] = (registry, {})
    cache = _CACHE[id(registry)][1]
    net_key = _key("network", spec.data.name, input_shape, classes, spec.backbone, spec.head)
    key = _key(net_key, spec.objective, spec.init)
    if key not in cache:
        if net_key not in cache:
            cache[net_key] = _network(registry, spec, input_shape, classes)
        network = cache[net_key]
        cache[key] = network if network is None or isinstance(network, Layout) else \
            _arm(registry, spec, network)
    return cache[key]


def _network(registry: Registry, spec: ArmSpec, input_shape: Shape, classes: int
             ) -> tuple[Any, Any, Any] | Layout | None:
    """The build context, backbone and head on the meta device after a forward pass of two
    samples, or the layout that says why they cannot be built and which of them failed;
    None where what failed is only the meta device's limit (``_meta_only``)."""
    import torch

    from geobench.contract.interfaces import BuildContext, Data

    meta = torch.device("meta")
    n = 2  # shapes do not depend on the batch size; two samples for batch norm
    x, y = torch.empty(n, *input_shape, device=meta), torch.zeros(n, dtype=torch.long,
                                                                    device=meta)
    data = Data(x, y, x, y, x, y, num_classes=classes, batch_size=n)
    ctx = BuildContext(seed=0, device=meta, data=data, registry=registry,
                       spec={"data": {"name": spec.data.name}})
    with meta, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            backbone = registry.create("backbones", spec.backbone, ctx)
            ctx.feature_dim = backbone.feature_dim
            features = backbone(x)
        except Exception as exc:  # the builder's own message, as the run would fail with it
            return None if _meta_only(exc) else Layout(error=_one_line(exc), failed="backbone")
        try:
            head = registry.create("heads", spec.head, ctx)
            ctx.embed_dim = getattr(head, "out_dim", ctx.feature_dim)
            head(features)
        except Exception as exc:
            return None if _meta_only(exc) else Layout(error=_one_line(exc), failed="head")
    return ctx, backbone, head


def _arm(registry: Registry, spec: ArmSpec, network: tuple[Any, Any, Any]) -> Layout | None:
    """The arm's layout: objective and init built beside the network (on copies of it, as
    an init may rewrap the backbone), or None where they cannot be built on the meta
    device."""
    import copy

    from geobench.contract.interfaces import Arm

    base, backbone, head = network
    ctx = copy.copy(base)
    try:
        with ctx.device, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arm = Arm(copy.deepcopy(backbone), copy.deepcopy(head),
                      registry.create("objectives", spec.objective, ctx))
            if spec.init is not None:
                registry.create("inits", spec.init, ctx)(arm, ctx.data)
            arm.objective.setup(arm)
    except Exception:  # e.g. a component that reads the data's values: unknown, not refused
        return None
    return Layout(tuple((name, tuple(p.shape), p.requires_grad)
                        for name, p in arm.named_parameters()))


def _meta_only(exc: BaseException) -> bool:
    """Whether ``exc`` is the meta device's limit, not the component's fault: an operation
    without a meta implementation, or one that reads values (``.item()``, a copy to the
    host), which a run on a real device computes."""
    return isinstance(exc, NotImplementedError) or "meta" in str(exc).lower()


def _one_line(exc: BaseException) -> str:
    """``exc`` as one line: its message's lines joined (at most 300 characters)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    text = text or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
