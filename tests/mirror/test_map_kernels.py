"""The maps' ∇Q (both forms) and ∇R against 50-digit references, in float32 and float64.

The kernels avoid expm1, log1p, sinh, asinh, where and general powers (slow on some
CPUs), so each is checked over the whole range: |x| from 1e-30 to the top of the range,
both signs, ±0, |u| > 20, λ so small that (λ/2)² leaves float32.  The reference is mpmath
at 50 digits on the very float the kernel received.  A kernel that evaluates exp(E) is
allowed the rounding of its argument E on top of a few ulp: (16 + |E|) ulp, E as the
docstring of each map states it; the others 16 ulp.  The same check runs again with torch
dispatching to AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``), whose functions round
differently from the AVX-512 ones.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import mpmath
import pytest
import torch
from geobench_mirror import maps

MAPS = [maps.euclidean(), maps.hypentropy(0.01), maps.hypentropy(10.0),
        maps.hypentropy(1e-30), maps.pnorm(3.0), maps.pnorm(4.5),
        maps.shifted_pnorm(3.0, 0.1), maps.shifted_pnorm(4.0, 2.0)]
DTYPES = [torch.float32, torch.float64]


def grid(top: float) -> list[float]:
    """Three values a decade from 1e-30 to ``top``, both signs, and ±0."""
    values = [m * 10.0**e for e in range(-30, int(math.log10(top)) + 1) for m in (1.0, 2.7, 6.1)]
    values = [v for v in values if v <= top]
    return [0.0, -0.0, *values, *(-v for v in values)]


def dual_grid(m: maps.MirrorMap) -> list[float]:
    """∇Q's inputs: hypentropy's to |u| = 85 (sinh overflows float32 at 89 + log(2/λ))."""
    if isinstance(m, maps.Hypentropy):
        return grid(10.0) + [20.5, -25.0, 33.3, -47.0, 61.0, 80.0, -85.0]
    return grid(1e6)


def reference_grad_Q(m: maps.MirrorMap, u: mpmath.mpf) -> mpmath.mpf:
    if isinstance(m, maps.Euclidean):
        return u
    if isinstance(m, maps.Hypentropy):
        return m.lam * mpmath.sinh(u)
    k = 1 / mpmath.mpf(m.p - 1)
    if isinstance(m, maps.ShiftedPNorm):
        y = abs(u) / mpmath.mpf(m.lam) ** (m.p - 1)
        return mpmath.sign(u) * m.lam * mpmath.expm1(k * mpmath.log1p(y))
    return mpmath.sign(u) * abs(u) ** k


def reference_grad_R(m: maps.MirrorMap, t: mpmath.mpf) -> mpmath.mpf:
    if isinstance(m, maps.Euclidean):
        return t
    if isinstance(m, maps.Hypentropy):
        return mpmath.asinh(t / m.lam)
    if isinstance(m, maps.ShiftedPNorm):
        c = mpmath.mpf(m.lam) ** (m.p - 1)
        return mpmath.sign(t) * c * mpmath.expm1((m.p - 1) * mpmath.log1p(abs(t) / m.lam))
    return mpmath.sign(t) * abs(t) ** (m.p - 1)


def exp_argument(m: maps.MirrorMap, x: float, dual: bool) -> float:
    """|E| of the exp(E) the kernel evaluates (0 where it takes none)."""
    if isinstance(m, maps.Hypentropy) and dual:
        return abs(x) + abs(math.log(m.lam / 2))  # exp(|u| + log(λ/2))
    if type(m) is maps.PNorm and x != 0:
        k = 1 / (m.p - 1) if dual else m.p - 1
        return 0.0 if k in (0.5, 1.0, 2.0, 3.0) else abs(k * math.log(abs(x)))
    if isinstance(m, maps.ShiftedPNorm) and m.p != 3.0:  # expm1(k log1p(y)) as tanh, exp
        y = abs(x) / m.lam ** (m.p - 1) if dual else abs(x) / m.lam
        return (1 / (m.p - 1) if dual else m.p - 1) * math.log1p(y)
    return 0.0


def worst_errors(m: maps.MirrorMap, dtype: torch.dtype) -> list[str]:
    """Every value where a kernel misses its bound, as 'function(x): error' lines."""
    mpmath.mp.dps = 50
    eps, info = torch.finfo(dtype).eps, torch.finfo(dtype)
    misses = []
    cases = [("grad_Q", m.grad_Q, reference_grad_Q, dual_grid(m), True),
             ("grad_Q_into", lambda u: m.grad_Q_into(u, torch.full_like(u, math.nan)),
              reference_grad_Q, dual_grid(m), True),
             ("grad_R", m.grad_R, reference_grad_R, grid(1e4), False)]
    for name, kernel, reference, values, dual in cases:
        x = torch.tensor(values, dtype=torch.float64).to(dtype)
        got = kernel(x).double().tolist()
        for xi, gi in zip(x.double().tolist(), got, strict=True):
            want = reference(m, mpmath.mpf(xi))
            if not info.tiny <= abs(want) <= info.max:  # outside the dtype's normal range
                if want == 0 and gi != 0:
                    misses.append(f"{name}({xi!r}) = {gi!r}, not 0")
                continue
            error = float(abs(gi - want) / abs(want)) / eps
            bound = 16 + exp_argument(m, xi, dual)
            if not error <= bound:
                misses.append(f"{name}({xi!r}): {error:.1f} ulp > {bound:.1f}")
    return misses


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m", MAPS, ids=repr)
def test_kernels_match_the_50_digit_reference(m, dtype):
    assert worst_errors(m, dtype) == []


def test_signs_and_zero_pass_through():
    for m in MAPS:
        u = torch.tensor([0.0, -0.0, 1e-3, -1e-3, 30.0, -30.0])
        out = m.grad_Q_into(u, torch.empty_like(u))
        assert torch.equal(torch.signbit(out[2:]), torch.signbit(u[2:])), m
        assert out[0] == 0 and out[1] == 0, m


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="x86 dispatch levels")
def test_kernels_match_the_reference_on_avx2_kernels():
    """The same check in a process whose torch dispatches to its AVX2 kernels."""
    probe = subprocess.run([sys.executable, "-c", "import torch; "
                            "print(torch.backends.cpu.get_cpu_capability())"],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "ATEN_CPU_CAPABILITY": "avx2"})
    if probe.stdout.strip() != "AVX2":
        pytest.skip(f"this CPU has no AVX2 kernels ({probe.stdout.strip()})")
    code = ("from tests.mirror.test_map_kernels import MAPS, DTYPES, worst_errors\n"
            "misses = [f'{m!r} {d}: {e}' for m in MAPS for d in DTYPES "
            "for e in worst_errors(m, d)]\n"
            "print('\\n'.join(misses)); raise SystemExit(1 if misses else 0)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[2],
                         env={**os.environ, "ATEN_CPU_CAPABILITY": "avx2"})
    assert run.returncode == 0, run.stdout + run.stderr
