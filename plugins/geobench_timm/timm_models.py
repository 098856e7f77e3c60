"""timm backbones (features only, never pretrained from a hub) and two CPU-sized variants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from pydantic import Field
from torch import nn

from geobench.api import BuildContext, Params
from geobench.plugins import did_you_mean

RESERVED = ("pretrained", "pretrained_cfg", "pretrained_cfg_overlay", "checkpoint_path",
            "num_classes", "in_chans")


def image_shape(ctx: BuildContext, what: str) -> tuple[int, int, int]:
    """(C, H, W) of the run's data; a clear error for vector data."""
    shape = ctx.data.input_shape if ctx.data is not None else None
    if shape is None or len(shape) != 3:
        raise ValueError(f"backbone {what} needs image data (C, H, W); the dataset gives "
                         f"samples of shape {shape} (use the mlp backbone for vectors)")
    return shape


def finish(model: nn.Module) -> nn.Module:
    """Set ``feature_dim``: the width of the features timm's forward returns."""
    model.feature_dim = int(getattr(model, "head_hidden_size", None) or model.num_features)
    return model


def cifar_stem(model: nn.Module) -> None:
    """Replace a ResNet's 7x7/2 stem conv by a 3x3/1 conv and drop its max-pool."""
    from timm.models.resnet import ResNet

    if not isinstance(model, ResNet) or not isinstance(model.conv1, nn.Conv2d):
        raise ValueError(f"cifar_stem applies to timm ResNets with a single-conv stem, not "
                         f"{type(model).__name__}")
    old = model.conv1
    model.conv1 = nn.Conv2d(old.in_channels, old.out_channels, 3, stride=1, padding=1,
                            bias=False)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
    model.maxpool = nn.Identity()


def read_state_dict(path: str) -> dict[str, torch.Tensor]:
    """A local state dict (``.safetensors``, else ``torch.load(weights_only=True)``);
    a ``{"state_dict": ...}`` or ``{"model": ...}`` wrapper and a ``module.`` prefix are removed."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"checkpoint {file} does not exist")
    if file.suffix == ".safetensors":
        from safetensors.torch import load_file

        state: Any = load_file(str(file))
    else:
        state = torch.load(file, map_location="cpu", weights_only=True)
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if state and all(k.startswith("module.") for k in state):
        state = {k[len("module."):]: v for k, v in state.items()}
    return state


def load_checkpoint(model: nn.Module, path: str) -> None:
    """Load local weights; keys of the model's classifier (absent here) are ignored, any
    other mismatch is an error."""
    state = read_state_dict(path)
    classifier = (getattr(model, "pretrained_cfg", None) or {}).get("classifier") or ()
    heads = (classifier,) if isinstance(classifier, str) else tuple(classifier)
    state = {k: v for k, v in state.items() if not any(k.startswith(h + ".") for h in heads)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"checkpoint {path} does not fit the model: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")


class TimmParams(Params):
    model: str = Field("resnet18", description="any timm model name (timm.list_models())")
    kwargs: dict[str, Any] = Field({},
                                   description="extra keyword arguments for timm.create_model")
    img_size: int | None = Field(None, ge=1, description="input size for ViT-style models "
                                 "(must match the data; None: not passed)")
    patch_size: int | None = Field(None, ge=1, description="patch size for ViT-style models")
    cifar_stem: bool = Field(False, description="ResNets: 3x3 stride-1 stem conv, no max-pool")
    checkpoint: str | None = Field(None, description="local weights (.safetensors, or a "
                                   "torch state dict); never downloaded")


def build_timm(params: TimmParams, ctx: BuildContext) -> nn.Module:
    """``timm.create_model(model, pretrained=False, num_classes=0, in_chans=C)``: features."""
    import timm

    c, h, w = image_shape(ctx, params.model)
    if not timm.is_model(params.model):
        raise ValueError(f"{params.model!r} is not a timm model"
                         f"{did_you_mean(params.model, timm.list_models())}")
    reserved = sorted(set(params.kwargs) & set(RESERVED))
    if reserved:
        raise ValueError(f"timm kwargs {reserved} are set by geobench (weights: use "
                         "`checkpoint: path`; channels come from the data)")
    extra = {k: v for k, v in (("img_size", params.img_size),
                               ("patch_size", params.patch_size)) if v is not None}
    model = timm.create_model(params.model, pretrained=False, num_classes=0, in_chans=c,
                              **extra, **params.kwargs)
    embed = getattr(model, "patch_embed", None)
    expected = tuple(getattr(embed, "img_size", None) or ()) if embed is not None else ()
    if expected and expected != (h, w) and not getattr(model, "dynamic_img_size", False):
        raise ValueError(f"{params.model} expects {expected[0]}x{expected[1]} inputs but the "
                         f"data is {h}x{w}: set img_size: {h} (and a patch_size dividing it)")
    if params.cifar_stem:
        cifar_stem(model)
    if params.checkpoint:
        load_checkpoint(model, params.checkpoint)
    return finish(model)


class ResNetTinyParams(Params):
    widths: tuple[int, int, int, int] = Field((16, 32, 64, 128), description="stage widths")
    layers: tuple[int, int, int, int] = Field((1, 1, 1, 1), description="blocks per stage")
    cifar_stem: bool = Field(True, description="3x3 stride-1 stem conv, no max-pool")


def build_resnet_tiny(params: ResNetTinyParams, ctx: BuildContext) -> nn.Module:
    """A small timm ResNet (BasicBlocks) for CPU smoke runs; features of width widths[-1]."""
    from timm.models.resnet import BasicBlock, ResNet

    c, _, _ = image_shape(ctx, "resnet_tiny")
    model = ResNet(block=BasicBlock, layers=params.layers, channels=params.widths,
                   stem_width=params.widths[0], in_chans=c, num_classes=0)
    if params.cifar_stem:
        cifar_stem(model)
    return finish(model)


class ViTTinyParams(Params):
    depth: int = Field(2, ge=1, description="transformer blocks")
    dim: int = Field(64, ge=1, description="embedding width")
    heads: int = Field(4, ge=1, description="attention heads (must divide dim)")
    patch_size: int = Field(4, ge=1, description="square patch side (must divide H and W)")
    mlp_ratio: float = Field(4.0, gt=0, description="MLP hidden width / dim")


def build_vit_tiny_cpu(params: ViTTinyParams, ctx: BuildContext) -> nn.Module:
    """A small timm VisionTransformer (class token) sized to the data's images."""
    from timm.models.vision_transformer import VisionTransformer

    c, h, w = image_shape(ctx, "vit_tiny_cpu")
    if h % params.patch_size or w % params.patch_size:
        raise ValueError(f"vit_tiny_cpu: patch_size {params.patch_size} does not divide "
                         f"{h}x{w} images")
    if params.dim % params.heads:
        raise ValueError(f"vit_tiny_cpu: heads {params.heads} does not divide dim {params.dim}")
    model = VisionTransformer(img_size=(h, w), patch_size=params.patch_size, in_chans=c,
                              num_classes=0, embed_dim=params.dim, depth=params.depth,
                              num_heads=params.heads, mlp_ratio=params.mlp_ratio)
    return finish(model)
