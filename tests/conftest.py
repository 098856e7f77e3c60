"""Shared fixtures: real third-party plugin distributions written into a temporary site dir,
and CLI subprocesses that load the plugins a test chooses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from importlib.metadata import distributions
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "tests" / "core" / "toy_plugin.py"  # the test-local plugin of small components
AUTOLOAD_OFF = "GEOBENCH_DISABLE_PLUGIN_AUTOLOAD"


def write_distribution(site: Path, dist: str, version: str, entry: str, module: str,
                       code: str) -> None:
    """An installed distribution ``dist`` whose module ``module`` is the ``geobench`` entry
    point ``entry`` — what ``pip install`` of a third-party plugin leaves on disk."""
    (site / f"{module}.py").write_text(textwrap.dedent(code))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[geobench]\n{entry} = {module}\n")


def install_toy(site: Path) -> None:
    """The toy plugin (tests/core/toy_plugin.py) installed in ``site`` as the distribution
    ``geobench-toy``, module ``geobench_toy``, entry point ``toy``."""
    if not (site / "geobench_toy.py").exists():
        write_distribution(site, "geobench-toy", "0.1", "toy", "geobench_toy", TOY.read_text())


def site_plugins(site: Path) -> list[str]:
    """The ``geobench`` entry-point names of the distributions installed in ``site``."""
    return sorted(ep.name for dist in distributions(path=[str(site)])
                  for ep in dist.entry_points if ep.group == "geobench")


def cli_env(site: Path | None = None, extra: dict[str, str] | None = None, *,
            toy: bool = False, autoload: bool = False) -> dict[str, str]:
    """The environment of a CLI subprocess: one torch thread, ``site`` on the path.

    Plugins: by default those this process's environment selects (tests/core turns
    autoload off: the core alone). ``toy``: the toy plugin is installed in ``site``, and the
    core loads it and the other plugins installed there, no other. ``autoload``: every
    installed plugin (entry points autoloaded), the bundled ones included. ``extra`` last.
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("GEOBENCH_TOY_BUILTIN", None)  # the toy as a built-in is the test process's own
    if toy:
        assert site is not None, "the toy plugin is installed in a site dir: pass site"
        install_toy(site)
    if toy or autoload:
        env.pop(AUTOLOAD_OFF, None)
    if toy and not autoload:
        env["GEOBENCH_PLUGINS"] = ",".join(site_plugins(site))
    env.update(extra or {})
    if site is not None:
        # no empty entry: Python reads one as the working folder
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(site), env.get("PYTHONPATH")] if p)
    return env


def wait_until(condition: Callable[[], object], timeout: float, what: str,
               poll: float = 0.2) -> None:
    """Wait until ``condition()`` is true (an event: a file, a row, a process gone), failing
    with ``what`` after ``timeout`` seconds; never a fixed sleep standing in for one."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


def run_cli(args: list[str], cwd: Path, site: Path | None = None, timeout: float = 600, *,
            toy: bool = False, autoload: bool = False, extra_env: dict[str, str] | None = None,
            **popen) -> subprocess.CompletedProcess:
    """``geobench ARGS`` in a fresh interpreter, with ``site`` on its path (plugins: see
    ``cli_env``)."""
    env = cli_env(site, extra_env, toy=toy, autoload=autoload)
    return subprocess.run([sys.executable, "-m", "geobench.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **popen)


def start_cli(args: list[str], cwd: Path, site: Path | None = None,
              extra_env: dict[str, str] | None = None,
              new_session: bool = False, *, toy: bool = False,
              autoload: bool = False) -> subprocess.Popen:
    """``geobench ARGS`` started in the background (text pipes for stdout and stderr); with
    ``new_session`` it leads its own process group (plugins: see ``cli_env``)."""
    return subprocess.Popen([sys.executable, "-m", "geobench.cli", *args], cwd=cwd,
                            env=cli_env(site, extra_env, toy=toy, autoload=autoload),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=new_session, preexec_fn=_interruptible)


def _interruptible() -> None:
    """SIGINT as at a terminal: a test run in the background of a shell without job control
    (``make test &`` in a script) ignores SIGINT, and so would the runs it starts, which
    would then train to the end instead of stopping at the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def recompute_claims():
    """geobench.audit.recompute: the recomputation of claims from their units alone, which
    imports nothing of geobench (numpy and scipy only)."""
    from geobench.audit import recompute

    return recompute
