"""Image-folder and scikit-learn digits datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F
from PIL import Image
from pydantic import Field, model_validator
from torch import Tensor

from geobench.api import BuildContext, Data, DataParams
from geobench_data import DataNotFound
from geobench_data.common import from_splits, seeded

ANNOTATIONS = "val_annotations.txt"  # Tiny-ImageNet's labels of its flat val/images folder

def resize(x: Tensor, size: int) -> Tensor:
    """Bilinear resize of (N, C, H, W) to (N, C, size, size), antialiased when shrinking."""
    if x.shape[-2:] == (size, size):
        return x
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False,
                         antialias=True).clamp(0.0, 1.0)


def stratified_split(y: Tensor, test_fraction: float, generator: torch.Generator) -> Tensor:
    """Boolean test mask taking ``round(test_fraction * n_c)`` random samples of each class."""
    mask = torch.zeros(len(y), dtype=torch.bool)
    for c in torch.unique(y).tolist():
        members = torch.nonzero(y == c).flatten()
        n_test = round(test_fraction * len(members))
        mask[members[torch.randperm(len(members), generator=generator)[:n_test]]] = True
    return mask


class ImageFolderParams(DataParams):
    root: str = Field(..., description="ImageFolder root: class sub-folders, or train/ and "
                      "test/ (or val/) folders that each hold class sub-folders; a val/ "
                      "folder may instead be Tiny-ImageNet's (images/ and "
                      "val_annotations.txt)")
    size: int = Field(32, ge=1, description="images are resized to size x size")
    channels: Literal[1, 3] = Field(3, description="1: grayscale, 3: RGB")
    test_fraction: float = Field(
        0.2, ge=0.0, lt=1.0, description="held-out share per class when root has no test/ or "
        "val/ folder (fixed split, seed 0); 0: no test split"
    )


def _read_folder(path: Path, params: ImageFolderParams) -> tuple[Tensor, Tensor, list[str]]:
    mode = "L" if params.channels == 1 else "RGB"
    from torchvision.datasets import ImageFolder
    from torchvision.transforms import v2

    to_tensor = v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])
    folder = ImageFolder(str(path), loader=lambda p: _open(p, mode), transform=to_tensor)
    images = [resize(img[None], params.size)[0] for img, _ in folder]
    x = torch.stack(images) if images else torch.zeros(0, params.channels, params.size,
                                                       params.size)
    return x, torch.tensor(folder.targets, dtype=torch.int64), folder.classes


def _read_annotated(path: Path, classes: list[str], params: ImageFolderParams
                    ) -> tuple[Tensor, Tensor, list[str]]:
    """Tiny-ImageNet's validation split: a flat ``images/`` folder whose classes are given
    by ``val_annotations.txt`` (file name, class folder name, then a bounding box)."""
    mode = "L" if params.channels == 1 else "RGB"
    index = {name: k for k, name in enumerate(classes)}
    from torchvision.transforms.v2.functional import pil_to_tensor

    images, labels = [], []
    table = path / ANNOTATIONS
    for n, line in enumerate(table.read_text().splitlines(), 1):
        fields = line.split("\t")
        if len(fields) < 2 or fields[1] not in index:
            raise DataNotFound(f"image_folder: {table} line {n}: expected a file name and one "
                               f"of the {len(classes)} training class folders, tab-separated")
        img = pil_to_tensor(_open(str(path / "images" / fields[0]), mode)).float() / 255.0
        images.append(resize(img[None], params.size)[0])
        labels.append(index[fields[1]])
    x = torch.stack(images) if images else torch.zeros(0, params.channels, params.size,
                                                       params.size)
    return x, torch.tensor(labels, dtype=torch.int64), classes


def _open(path: str, mode: str) -> Image.Image:
    with open(path, "rb") as f:
        return Image.open(f).convert(mode)


def build_image_folder(params: ImageFolderParams, ctx: BuildContext) -> Data:
    """Images from a torchvision ImageFolder tree, resized, as float32 in [0, 1]."""
    root = Path(params.root).expanduser()
    if not root.is_dir():
        raise DataNotFound(f"image_folder: {root} is not a folder; set `root` to a folder with "
                           "one sub-folder of images per class")
    test_dir = next((root / n for n in ("test", "val") if (root / n).is_dir()), None)
    if (root / "train").is_dir() and test_dir is not None:
        train_x, train_y, classes = _read_folder(root / "train", params)
        test_x, test_y, test_classes = (
            _read_annotated(test_dir, classes, params) if (test_dir / ANNOTATIONS).is_file()
            else _read_folder(test_dir, params))
        if test_classes != classes:
            raise ValueError(f"image_folder: {root / 'train'} and {test_dir} have different "
                             "class folders")
    else:
        x, y, classes = _read_folder(root, params)
        test = stratified_split(y, params.test_fraction, seeded(0, "image_folder"))
        train_x, train_y, test_x, test_y = x[~test], y[~test], x[test], y[test]
    return from_splits(train_x, train_y, test_x, test_y, len(classes), params, ctx.seed)


DIGITS_PER_CLASS = (178, 182, 177, 183, 181, 182, 181, 179, 174, 180)  # scikit-learn's digits


class DigitsParams(DataParams):
    size: int = Field(16, ge=1, description="images are resized to size x size (native 8)")
    channels: Literal[1, 3] = Field(1, description="1, or 3 identical channels")
    test_fraction: float = Field(
        0.2, gt=0.0, lt=1.0, description="held-out share per class (fixed split, seed 0)"
    )

    @model_validator(mode="after")
    def _fits(self) -> DigitsParams:
        """``n_train`` / ``n_test`` at most the split's size (all ten classes; a class subset
        is checked when the data is built)."""
        per_class = [round(self.test_fraction * n) for n in DIGITS_PER_CLASS]
        test = sum(per_class)
        sizes = {"n_train": sum(DIGITS_PER_CLASS) - test, "n_test": test}
        for name, have in sizes.items():
            want = getattr(self, name)
            if self.classes is None and want is not None and want > have:
                raise ValueError(f"{name} {want} is more than the {have} images of the digits "
                                 f"{name[2:]} split (test_fraction {self.test_fraction})")
        return self


def digits_test_size(params: DigitsParams) -> int:
    """The fewest test samples the digits split can have for these params: of the listed
    classes, or of the ``classes`` drawn classes with the fewest."""
    per_class = [round(params.test_fraction * n) for n in DIGITS_PER_CLASS]
    if isinstance(params.classes, list):
        return sum(per_class[c] for c in params.classes if 0 <= c < len(per_class))
    return sum(sorted(per_class)[:params.classes or len(per_class)])


def build_digits(params: DigitsParams, ctx: BuildContext) -> Data:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, 10 classes), values / 16.

    The train/test split is stratified and fixed (independent of the run's seed).
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.tensor(bunch.images, dtype=torch.float32)[:, None] / 16.0
    x = resize(x, params.size).expand(-1, params.channels, -1, -1).contiguous()
    y = torch.tensor(bunch.target, dtype=torch.int64)
    test = stratified_split(y, params.test_fraction, seeded(0, "digits"))
    return from_splits(x[~test], y[~test], x[test], y[test], 10, params, ctx.seed)
