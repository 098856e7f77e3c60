"""Start-up time of the command line: ``geobench --help`` and ``geobench list``.

Each command runs in a fresh interpreter, ``--repeats`` times, alternating with the
baselines measured in the same run: a bare interpreter (``python -c pass``) and
``python -c "import torch"``. Prints the median wall time of each and the ratios.

    python benchmarks/startup.py [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python": [sys.executable, "-c", "pass"],
    "import_torch": [sys.executable, "-c", "import torch"],
    "help": [sys.executable, "-m", "geobench.cli", "--help"],
    "list": [sys.executable, "-m", "geobench.cli", "list"],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for cmd in COMMANDS.values():  # warm the file cache
        wall(cmd)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    median = {name: statistics.median(t) for name, t in times.items()}
    if args.json:
        print(json.dumps({"median_s": median, "repeats": args.repeats}))
        return
    for name, seconds in median.items():
        print(f"{name:<13} {seconds:6.3f} s  ({seconds / median['python']:5.1f}x python, "
              f"{seconds / median['import_torch']:4.2f}x import torch)")


if __name__ == "__main__":
    main()
