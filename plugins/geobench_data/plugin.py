"""Registers the datasets and augmentations of geobench_data."""

from __future__ import annotations

from geobench.hookspecs import hookimpl


@hookimpl
def register_datasets(register) -> None:
    from collections.abc import Callable

    from geobench_data import cifar, images, mnist, orbit, synthetic

    def images_of(classes: int | None = None, size: int | None = None
                  ) -> Callable[[object], dict[str, object]]:
        def gives(params) -> dict[str, object]:
            side, channels = size or params.size, 3 if size else params.channels
            return {"input": "image", "orbit": False, "image_size": side,
                    "input_shape": (channels, side, side)} | (
                {"classes": classes} if classes else {})

        return gives

    def vectors(params, orbits: bool = False, classes: int | None = None
                ) -> dict[str, object]:
        return {"input": "vector", "orbit": orbits, "input_shape": (params.dim,),
                "classes": classes or params.num_classes}

    register("cifar10", cifar.build_cifar10, params=cifar.CifarParams, gives=images_of(10, 32),
             doc="CIFAR-10 from a local copy (torchvision format)")
    register("cifar100", cifar.build_cifar100, params=cifar.CifarParams, gives=images_of(100, 32),
             doc="CIFAR-100 (fine labels) from a local copy (torchvision format)")
    register("fashion_mnist", mnist.build_fashion_mnist, params=mnist.MnistParams,
             gives=images_of(10), doc="Fashion-MNIST from its IDX files (make data), 28x28 "
             "grayscale, optionally padded to 32 and 3 channels")
    register("mnist", mnist.build_mnist, params=mnist.MnistParams, gives=images_of(10),
             doc="MNIST from its IDX files (make data), 28x28 grayscale, optionally padded "
             "to 32 and 3 channels")
    register("image_folder", images.build_image_folder, params=images.ImageFolderParams,
             gives=images_of(), doc="images in a torchvision ImageFolder tree, resized")
    register("digits", images.build_digits, params=images.DigitsParams,
             gives=lambda p: images_of(10)(p) | {"test_size": images.digits_test_size(p)},
             doc="scikit-learn's bundled 8x8 digits (1797 images, 10 classes), resized")
    register("gaussian_mixture", synthetic.build_gaussian_mixture,
             params=synthetic.GaussianMixtureParams, gives=vectors,
             doc="isotropic Gaussian classes with means on a sphere in R^D")
    register("student_teacher", synthetic.build_student_teacher,
             params=synthetic.StudentTeacherParams, gives=lambda p: vectors(p, classes=2),
             doc="Gaussian inputs labelled by a random two-layer ReLU teacher, optional margin")
    register("linear_teacher", synthetic.build_linear_teacher,
             params=synthetic.LinearTeacherParams, gives=lambda p: vectors(p, classes=2),
             doc="Gaussian inputs labelled by a sparse linear teacher (separable through 0)")
    register("orbit_manifold", orbit.build_orbit_manifold, params=orbit.OrbitManifoldParams,
             gives=lambda p: vectors(p, orbits=True),
             doc="latent classes embedded in R^D; augmentations are an exact torus action")


@hookimpl
def register_augmentations(register) -> None:
    from geobench.params import has
    from geobench_data import actions, augment

    register("none", actions.build_none, doc="identity: views equal the inputs")
    register("simclr", augment.build_image_recipe, params=augment.SimCLRParams,
             needs=augment.recipe_needs,
             doc="SimCLR: resized crop, flip, colour jitter, grayscale (batched)")
    register("byol", augment.build_image_recipe, params=augment.BYOLParams,
             needs=augment.recipe_needs,
             doc="BYOL: SimCLR's ops plus per-view blur and solarize (batched)")
    register("orbit_action", actions.build_orbit_action,
             needs=[has("orbit", "orbit coordinates (data such as orbit_manifold)")],
             doc="a random group element on each sample (datasets with extras['orbit'])")
    register("gaussian_noise", actions.build_gaussian_noise, params=actions.GaussianNoiseParams,
             doc="additive Gaussian noise of std sigma (vectors or images)")
