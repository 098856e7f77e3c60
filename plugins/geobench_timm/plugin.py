"""Registers the backbones of geobench_timm."""

from __future__ import annotations

from geobench.hookspecs import hookimpl


@hookimpl
def register_backbones(register) -> None:
    from geobench_timm import mlp, timm_models, vgg

    register("timm", timm_models.build_timm, params=timm_models.TimmParams,
             doc="any timm model by name, features only, local weights only")
    register("resnet_tiny", timm_models.build_resnet_tiny, params=timm_models.ResNetTinyParams,
             doc="small timm ResNet (16..128 wide, one block per stage, CIFAR stem)")
    register("vit_tiny_cpu", timm_models.build_vit_tiny_cpu, params=timm_models.ViTTinyParams,
             doc="small timm ViT (depth 2, dim 64, patch 4)")
    register("mlp", mlp.build_mlp, params=mlp.MLPParams,
             doc="MLP over flattened inputs; homogeneous without bias/norm")
    register("homogeneous_vgg16", vgg.build_homogeneous_vgg16, params=vgg.VGGParams,
             doc="VGG-16 without biases and BN (homogeneous of degree 16)")
