"""geobench_timm plugin: image backbones from timm and homogeneous networks."""
