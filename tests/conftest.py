"""Shared fixtures: real third-party plugin distributions written into a temporary site dir."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def write_distribution(site: Path, dist: str, version: str, entry: str, module: str,
                       code: str) -> None:
    """An installed distribution ``dist`` whose module ``module`` is the ``geobench`` entry
    point ``entry`` — what ``pip install`` of a third-party plugin leaves on disk."""
    (site / f"{module}.py").write_text(textwrap.dedent(code))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[geobench]\n{entry} = {module}\n")


def cli_env(site: Path | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: one torch thread, ``site`` on the path."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(extra or {})}
    if site is not None:
        env["PYTHONPATH"] = str(site) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_cli(args: list[str], cwd: Path, site: Path | None = None, timeout: float = 600,
            **popen) -> subprocess.CompletedProcess:
    """``geobench ARGS`` in a fresh interpreter, with ``site`` on its path."""
    return subprocess.run([sys.executable, "-m", "geobench.cli", *args], cwd=cwd,
                          env=cli_env(site), capture_output=True, text=True, timeout=timeout,
                          **popen)


def start_cli(args: list[str], cwd: Path, site: Path | None = None,
              extra_env: dict[str, str] | None = None,
              new_session: bool = False) -> subprocess.Popen:
    """``geobench ARGS`` started in the background (text pipes for stdout and stderr); with
    ``new_session`` it leads its own process group."""
    return subprocess.Popen([sys.executable, "-m", "geobench.cli", *args], cwd=cwd,
                            env=cli_env(site, extra_env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=new_session)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    return path
