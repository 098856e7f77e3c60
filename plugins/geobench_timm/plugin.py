"""Registers the backbones of geobench_timm."""

from __future__ import annotations

from geobench.hookspecs import hookimpl


@hookimpl
def register_backbones(register) -> None:
    from geobench.params import BATCH_NORM, BUILDS, IMAGES, Need
    from geobench_timm import mlp, timm_models, vgg

    plain = {"homogeneous": False, "layered": False}

    def patches(params) -> list[Need]:
        side = params.patch_size
        return [IMAGES, Need(("image_size",), lambda s: s % side == 0,
                             f"images whose side is a multiple of patch_size {side}"), BUILDS]

    register("timm", timm_models.build_timm, params=timm_models.TimmParams, gives=plain,
             needs=[IMAGES, BUILDS],
             doc="any timm model by name, features only, local weights only")
    register("resnet_tiny", timm_models.build_resnet_tiny, params=timm_models.ResNetTinyParams,
             gives=lambda p: plain | {"features": p.widths[-1]},
             needs=[IMAGES, BATCH_NORM, BUILDS],
             doc="small timm ResNet (16..128 wide, one block per stage, CIFAR stem)")
    register("vit_tiny_cpu", timm_models.build_vit_tiny_cpu, params=timm_models.ViTTinyParams,
             gives=lambda p: plain | {"features": p.dim}, needs=patches,
             doc="small timm ViT (depth 2, dim 64, patch 4)")
    register("mlp", mlp.build_mlp, params=mlp.MLPParams, gives=mlp.gives, needs=mlp.needs,
             doc="MLP over flattened inputs; homogeneous without bias/norm")
    register("homogeneous_vgg16", vgg.build_homogeneous_vgg16, params=vgg.VGGParams,
             gives=lambda p: {"homogeneous": True, "layered": True}
             | ({"features": p.out_dim} if p.out_dim else {}), needs=[IMAGES, BUILDS],
             doc="VGG-16 without biases and BN (homogeneous of degree 16)")
