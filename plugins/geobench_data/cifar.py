"""CIFAR-10 / CIFAR-100 from a local copy, read by torchvision's own loader."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from pydantic import Field

from geobench.api import BuildContext, Data, DataParams
from geobench_data import DataNotFound
from geobench_data.common import from_splits


def default_root() -> str:
    """``$GEOBENCH_DATA`` if set, else ``~/.cache/geobench/data``."""
    return os.environ.get("GEOBENCH_DATA") or str(Path("~/.cache/geobench/data").expanduser())


class CifarParams(DataParams):
    root: str | None = Field(
        None, description="folder holding the extracted batches (None: $GEOBENCH_DATA, "
        "else ~/.cache/geobench/data)"
    )
    download: bool = Field(False, description="download the archive into root if missing")
    verify_md5: bool = Field(
        True, description="check the files' md5 against the official release (false: only "
        "check that they exist, for re-packed or subset copies)"
    )


def _unverified(cls: type) -> type:
    """``cls`` with the same file names but no md5 checks (torchvision skips None sums)."""
    return type(cls.__name__, (cls,), {
        "train_list": [[name, None] for name, _ in cls.train_list],
        "test_list": [[name, None] for name, _ in cls.test_list],
        "meta": {**cls.meta, "md5": None},
    })


def _to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 (N, H, W, C) -> float32 (N, C, H, W) in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0


def load_cifar(cls: type, params: CifarParams, seed: int) -> Data:
    """Both splits of ``cls`` from ``params.root``, then the common split rules."""
    root = Path(params.root or default_root()).expanduser()
    loader = cls if params.verify_md5 else _unverified(cls)
    folder = root / cls.base_folder
    names = [name for name, _ in cls.train_list + cls.test_list] + [cls.meta["filename"]]
    missing = [name for name in names if not (folder / name).is_file()]
    if missing and not params.download:
        raise DataNotFound(
            f"{cls.__name__} not found: {folder} lacks {', '.join(missing)}; set "
            f"`download: true`, or place the extracted {cls.base_folder!r} folder in {root} "
            "(param `root`, or $GEOBENCH_DATA)"
        )
    try:
        train = loader(str(root), train=True, download=params.download)
        test = loader(str(root), train=False, download=False)
    except RuntimeError:
        raise DataNotFound(
            f"{cls.__name__}: files in {folder} failed torchvision's md5 check; fetch them "
            "again (`download: true`), or set `verify_md5: false` for a re-packed copy"
        ) from None
    num_classes = len(train.classes)
    return from_splits(
        _to_tensor(train.data), torch.tensor(train.targets), _to_tensor(test.data),
        torch.tensor(test.targets), num_classes, params, seed,
    )


def build_cifar10(params: CifarParams, ctx: BuildContext) -> Data:
    """CIFAR-10: 50000 + 10000 RGB 32x32 images, 10 classes."""
    from torchvision.datasets import CIFAR10

    return load_cifar(CIFAR10, params, ctx.seed)


def build_cifar100(params: CifarParams, ctx: BuildContext) -> Data:
    """CIFAR-100: 50000 + 10000 RGB 32x32 images, 100 fine classes."""
    from torchvision.datasets import CIFAR100

    return load_cifar(CIFAR100, params, ctx.seed)
