"""The published numbers are what the documented command gives: the demo's command, run as
``make demo`` runs it (no thread count in the environment), on a slice of the collapse suite
(its large-step design points, both BN settings, every exploration trial seed) stores the
values ``leaderboards/collapse_values.csv.gz`` published for those cells, byte for byte, in
every series the results table reads (slow). The exploration seeds are the ones the suite
and the page share: the suite's confirmation seeds are fresh ones, not run when the page
was published.

Bits are the same only on the kind of CPU that made them (docs/results.md, "What is
bit-reproducible"): the published values come from an Intel CPU with AVX-512, and elsewhere
the test is skipped, naming the CPU it found."""

import csv
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLICE = "tags.regime=discrete"  # lr 0.64, 25 steps: 2 design points
PUBLISHED_ON = ("GenuineIntel", "avx512f")  # the CPU vendor and SIMD of the published run


def cpu_kind() -> tuple[str, bool]:
    """This CPU's vendor and whether it has AVX-512 (from /proc/cpuinfo; '' where absent)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "", False
    fields = dict(line.split(":", 1) for line in text.splitlines()[:40] if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    return fields.get("vendor_id", ""), PUBLISHED_ON[1] in fields.get("flags", "").split()


@pytest.mark.slow
@pytest.mark.skipif(cpu_kind() != (PUBLISHED_ON[0], True),
                    reason=f"the published values come from a {PUBLISHED_ON[0]} CPU with "
                           f"AVX-512; this one is {cpu_kind()}: its kernels round otherwise")
def test_the_demo_command_reproduces_the_published_values(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    store = tmp_path / "geobench.sqlite"
    subprocess.run([sys.executable, "-m", "geobench.cli", "run", "suites/collapse.yaml",
                    "--seeds", "explore", "--only", SLICE, "--store", str(store), "--quiet"],
                   cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    published = _lines(ROOT / "leaderboards" / "collapse_values.csv.gz")
    ours = _lines(tmp_path / "leaderboards" / "collapse_values.csv.gz")
    assert ours[0] == published[0]
    with (ROOT / "leaderboards" / "collapse.csv").open(newline="") as fh:
        shown = {row["metric"] for row in csv.DictReader(fh)}  # the results table's series
    column = {name: i for i, name in enumerate(next(csv.reader([ours[0]])))}
    stored = []
    for line in ours[1:]:
        row = next(csv.reader([line]))
        if row[column["step"]] and f"{row[column['metric']]}.{row[column['field']]}" in shown:
            stored.append(line)
    assert len({line.split(",", 1)[0] for line in stored}) == 2 * 5  # BN off/on x 5 seeds
    known = set(published)
    assert [line for line in stored if line not in known] == []


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return fh.read().splitlines()
