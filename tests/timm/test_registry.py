"""Every component of the two plugins is registered with its parameter model."""

from __future__ import annotations

from geobench.contract.manager import load_registry

DATASETS = {"cifar10", "cifar100", "image_folder", "digits", "fashion_mnist", "mnist",
            "gaussian_mixture", "orbit_manifold", "student_teacher"}
AUGMENTATIONS = {"simclr", "byol", "none", "orbit_action", "gaussian_noise"}
BACKBONES = {"timm", "resnet_tiny", "vit_tiny_cpu", "mlp", "homogeneous_vgg16"}


def test_components_are_listed_with_params() -> None:
    registry = load_registry()
    for kind, names, origin in (("datasets", DATASETS, "data"),
                                ("augmentations", AUGMENTATIONS, "data"),
                                ("backbones", BACKBONES, "timm")):
        assert names <= set(registry.names(kind))
        for name in names:
            entry = registry.get(kind, name)
            assert entry.origin.startswith(origin) and entry.doc
            for row in entry.param_rows():
                assert row["doc"], f"{kind} {name}: param {row['name']} lacks a description"
    rows = {r["name"]: r for r in registry.get("backbones", "mlp").param_rows()}
    assert rows["activation"]["default"] == "'relu'" and "depth" in rows
    assert {"n_train", "classes", "reference_size", "root", "download"} <= {
        r["name"] for r in registry.get("datasets", "cifar10").param_rows()}
