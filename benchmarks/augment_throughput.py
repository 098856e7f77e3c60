"""Augmentation throughput: geobench's batched recipes vs torchvision per-sample PIL transforms.

Both paths produce two views of every image of the same uint8 image set with the same recipe
(SimCLR or BYOL: random resized crop, flip, colour jitter p=0.8, grayscale p=0.2, and for
BYOL blur / solarize with view-0 and view-1 probabilities):

- ``batched``: ``geobench_data`` augmentation on float (N, C, H, W) batches of ``--batch``
  images on ``--device``, random parameters from a CPU generator;
- ``torchvision``: ``torchvision.transforms.v2`` applied image by image to PIL images, the
  usual DataLoader-worker pipeline (single process here), ending in a float tensor.

Prints images/s (views counted) of each path and the ratio batched / torchvision, measured in
the same run, alternating repeats so that machine noise hits both alike.

    OMP_NUM_THREADS=1 python benchmarks/augment_throughput.py     # 512 CIFAR-sized images
    python benchmarks/augment_throughput.py --big                 # 8192 images at 32 and 96 px
    python benchmarks/augment_throughput.py --device cuda --recipe byol
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from PIL import Image
from torchvision.transforms import v2

from geobench.contract.interfaces import BuildContext
from geobench.contract.manager import registry


def torchvision_recipe(name: str, size: int, view: int) -> v2.Compose:
    """The torchvision equivalent of geobench's recipe with default parameters."""
    jitter = (0.8, 0.8, 0.8, 0.2) if name == "simclr" else (0.4, 0.4, 0.2, 0.1)
    steps = [v2.RandomResizedCrop(size, scale=(0.08, 1.0), antialias=True),
             v2.RandomHorizontalFlip(),
             v2.RandomApply([v2.ColorJitter(*jitter)], p=0.8),
             v2.RandomGrayscale(p=0.2)]
    if name == "byol":
        kernel = max(3, round(0.1 * size))
        kernel += 1 - kernel % 2
        steps += [v2.RandomApply([v2.GaussianBlur(kernel, (0.1, 2.0))], p=(1.0, 0.1)[view]),
                  v2.RandomSolarize(0.5, p=(0.0, 0.2)[view])]
    return v2.Compose([*steps, v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])


def run_batched(aug, x: torch.Tensor, batch: int, device: torch.device) -> float:
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    for i in range(0, len(x), batch):
        xb = x[i:i + batch].to(device).float() / 255.0
        index = torch.arange(i, i + len(xb))
        for view in (0, 1):
            aug(xb, index, generator, view)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 2 * len(x) / (time.perf_counter() - start)


def run_torchvision(pipes: list[v2.Compose], images: list[Image.Image]) -> float:
    start = time.perf_counter()
    for img in images:
        for pipe in pipes:
            pipe(img)
    return 2 * len(images) / (time.perf_counter() - start)


def measure(recipe: str, n: int, size: int, batch: int, device: torch.device,
            repeats: int) -> tuple[float, float]:
    x = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8,
                      generator=torch.Generator().manual_seed(1))
    images = [Image.fromarray(img.permute(1, 2, 0).numpy()) for img in x]
    aug = registry().build("augmentations", {"name": recipe},
                           BuildContext(seed=0, device=device))
    pipes = [torchvision_recipe(recipe, size, view) for view in (0, 1)]
    run_batched(aug, x[:batch], batch, device)  # warm-up
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(run_batched(aug, x, batch, device))
        theirs.append(run_torchvision(pipes, images))
    return statistics.median(ours), statistics.median(theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", choices=["simclr", "byol"], default="simclr")
    parser.add_argument("--n", type=int, default=512, help="images per repeat")
    parser.add_argument("--sizes", type=int, nargs="+", default=[32])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--big", action="store_true", help="8192 images at 32 and 96 px")
    args = parser.parse_args()
    if args.big:
        args.n, args.sizes = 8192, [32, 96]
    device = torch.device(args.device)
    print(f"recipe {args.recipe}, {args.n} images x 2 views, batch {args.batch}, "
          f"device {device}, torch threads {torch.get_num_threads()}")
    print(f"{'size':>5} {'batched img/s':>14} {'torchvision img/s':>18} {'ratio':>7}")
    for size in args.sizes:
        ours, theirs = measure(args.recipe, args.n, size, args.batch, device, args.repeats)
        print(f"{size:>5} {ours:>14.0f} {theirs:>18.0f} {ours / theirs:>7.2f}")


if __name__ == "__main__":
    main()
