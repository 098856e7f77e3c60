"""ns per element of the elementwise ops a mirror map can be built from, on this CPU.

The built-in maps (plugins/geobench_mirror/maps.py) use only ops that torch evaluates with
SIMD at every dispatch level; this prints what each op costs here, on a float32 array of
2^18 elements that stays in cache (one thread, eager, ``out=`` so nothing is allocated),
and its ratio to ``add``.  Run it once per dispatch level to see which ops vectorise:

    python benchmarks/elementwise_ops.py                          # the CPU's own level
    ATEN_CPU_CAPABILITY=avx2 python benchmarks/elementwise_ops.py
    ATEN_CPU_CAPABILITY=default python benchmarks/elementwise_ops.py   # no SIMD
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

N = 1 << 18


def ns_per_element(op: Callable[[], object], repeats: int = 7, calls: int = 100) -> float:
    op()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            op()
        times.append((time.perf_counter() - start) / calls / N * 1e9)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(N, generator=g) + 0.25  # in (0.25, 1.25): no op meets a special value
    y = torch.rand(N, generator=g) + 0.25
    out = torch.empty_like(x)
    mask = x > 0.75
    ops: dict[str, Callable[[], object]] = {
        "add": lambda: torch.add(x, y, out=out),
        "mul": lambda: torch.mul(x, y, out=out),
        "div": lambda: torch.div(x, y, out=out),
        "addcdiv": lambda: torch.addcdiv(x, x, y, out=out),
        "abs": lambda: torch.abs(x, out=out),
        "copysign": lambda: torch.copysign(x, y, out=out),
        "sqrt": lambda: torch.sqrt(x, out=out),
        "exp": lambda: torch.exp(x, out=out),
        "log": lambda: torch.log(x, out=out),
        "tanh": lambda: torch.tanh(x, out=out),
        "pow 1/3": lambda: torch.pow(x, 1 / 3, out=out),
        "expm1": lambda: torch.expm1(x, out=out),
        "log1p": lambda: torch.log1p(x, out=out),
        "sinh": lambda: torch.sinh(x, out=out),
        "asinh": lambda: torch.asinh(x, out=out),
        "where": lambda: torch.where(mask, x, y, out=out),
    }
    times = {name: ns_per_element(op) for name, op in ops.items()}
    print(f"torch {torch.__version__}, dispatch {torch.backends.cpu.get_cpu_capability()}, "
          f"float32, {N} elements, 1 thread")
    print(f"{'op':10s} {'ns/elem':>8s} {'x add':>7s}")
    for name, value in times.items():
        print(f"{name:10s} {value:8.2f} {value / times['add']:7.1f}")


if __name__ == "__main__":
    main()
