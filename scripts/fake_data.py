"""Write random images in the real on-disk formats under ROOT: CIFAR-10/100 pickles,
Fashion-MNIST and MNIST IDX files (ROOT/fashion-mnist, ROOT/mnist) and Tiny-ImageNet's
layout (ROOT/tiny-imagenet-200). For speed checks and preflights on machines without the
real files: point $GEOBENCH_DATA at ROOT and read CIFAR with ``data.verify_md5: false``.

    python scripts/fake_data.py ROOT [--n-train 50000] [--n-test 10000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from geobench_data.fakes import write_cifar, write_mnist, write_tiny_imagenet


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--n-train", type=int, default=50000)
    ap.add_argument("--n-test", type=int, default=10000)
    args = ap.parse_args()
    write_cifar(args.root, args.n_train, args.n_test)
    for name in ("fashion-mnist", "mnist"):
        write_mnist(args.root / name, args.n_train, args.n_test)
    write_tiny_imagenet(args.root / "tiny-imagenet-200")
    print(f"wrote random files in the CIFAR, IDX and Tiny-ImageNet formats under {args.root}")


if __name__ == "__main__":
    main()
