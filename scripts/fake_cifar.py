"""Write random images in the CIFAR-10 and CIFAR-100 pickle formats under ROOT (speed checks
on machines without the real files; md5 checks must be off: ``data.verify_md5: false``).

    python scripts/fake_cifar.py ROOT [--n-train 50000]
"""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import numpy as np


def write(root: Path, n_train: int, n_test: int) -> None:
    rng = np.random.default_rng(0)

    def dump(path: Path, n: int, key: str, classes: int) -> None:
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = rng.integers(0, classes, n).tolist()
        with open(path, "wb") as fh:
            pickle.dump({b"data": data, key.encode(): labels}, fh)

    ten = root / "cifar-10-batches-py"
    ten.mkdir(parents=True, exist_ok=True)
    for i in range(1, 6):
        dump(ten / f"data_batch_{i}", n_train // 5, "labels", 10)
    dump(ten / "test_batch", n_test, "labels", 10)
    with open(ten / "batches.meta", "wb") as fh:
        pickle.dump({b"label_names": [f"class{i}".encode() for i in range(10)]}, fh)
    hundred = root / "cifar-100-python"
    hundred.mkdir(parents=True, exist_ok=True)
    dump(hundred / "train", n_train, "fine_labels", 100)
    dump(hundred / "test", n_test, "fine_labels", 100)
    with open(hundred / "meta", "wb") as fh:
        pickle.dump({b"fine_label_names": [f"class{i}".encode() for i in range(100)]}, fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--n-train", type=int, default=50000)
    ap.add_argument("--n-test", type=int, default=10000)
    args = ap.parse_args()
    write(args.root, args.n_train, args.n_test)
    print(f"wrote random CIFAR-format files under {args.root}")


if __name__ == "__main__":
    main()
