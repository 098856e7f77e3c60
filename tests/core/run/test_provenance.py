"""What produced a result (geobench.run.provenance): git revision and state, versions."""

import platform
import subprocess

import pytest
import torch

from geobench.run import provenance as prov
from geobench.version import __version__


@pytest.fixture
def fresh():
    prov.provenance.cache_clear()
    yield prov.provenance
    prov.provenance.cache_clear()


def test_versions_and_host(fresh):
    got = fresh()
    assert set(got) == {"git_sha", "git_dirty", "python", "torch", "geobench", "host", "cpu"}
    assert (got["python"], got["torch"], got["geobench"], got["host"]) == (
        platform.python_version(), torch.__version__, __version__, platform.node())
    assert got["cpu"].endswith(f" ({torch.backends.cpu.get_cpu_capability()})")
    assert fresh() is got  # computed once per process


@pytest.mark.parametrize("status, dirty", [("", False), (" M geobench/cli.py", True),
                                           (None, None)])
def test_git_state(fresh, monkeypatch, status, dirty):
    answers = {("rev-parse", "HEAD"): None if status is None else "abc123",
               ("status", "--porcelain", "--untracked-files=no"): status}
    monkeypatch.setattr(prov, "_git", lambda *args: answers[args])
    got = fresh()
    assert got["git_dirty"] is dirty and got["git_sha"] == (None if status is None else "abc123")


def test_git_outside_a_checkout_or_without_git_is_none(monkeypatch):
    def fails(*args, **kwargs):
        raise subprocess.CalledProcessError(128, args[0])

    monkeypatch.setattr(prov.subprocess, "run", fails)
    assert prov._git("rev-parse", "HEAD") is None

    def missing(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(prov.subprocess, "run", missing)
    assert prov._git("status") is None


def test_the_cpu_model_is_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                    "model name\t: AMD EPYC 9R14 96-Core Processor\nflags\t\t: fpu\n" * 2)
    level = torch.backends.cpu.get_cpu_capability()
    assert prov.cpu_model(str(info)) == f"AMD EPYC 9R14 96-Core Processor ({level})"
    fallback = platform.processor() or platform.machine()
    assert prov.cpu_model(str(tmp_path / "missing")) == f"{fallback} ({level})"
