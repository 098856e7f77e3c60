"""docs/plugins.md's walk-through, run as written: its files written as shown, its commands
run in order in a fresh folder, every output line it shows found in the command's output
(``...`` stands for any text) and every command ending with the exit status the block
declares (``<!-- exit: N -->``, else 0).

The walk-through's ``pip install -e .`` installs the plugin into a site folder of this test
(and again after the files change), ``pip uninstall -y <dist>`` empties that folder; its
``geobench`` commands load the bundled plugins and those installed there; any other command
runs in bash."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import run_cli

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
SECTION = "## From a scaffold to a published page"
BLOCK = re.compile(r"(?:<!-- (file|exit): (\S+) -->\n)?```(\w*)\n(.*?)```\n", re.S)


@dataclass
class Step:
    """A command of a console block, the lines it shows and the exit status it declares."""

    command: str
    shown: list[str] = field(default_factory=list)
    status: int = 0


def walk_through() -> list[tuple[str, object]]:
    """The section's steps in order: ("file", (path, text)) and ("run", Step)."""
    text = GUIDE.read_text()
    section = text[text.index(SECTION):]
    end = section.find("\n## ", len(SECTION))
    section = section if end < 0 else section[:end]
    steps: list[tuple[str, object]] = []
    for mark, value, lang, body in BLOCK.findall(section):
        if mark == "file":
            steps.append(("file", (value, body)))
        elif lang == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    steps.append(("run", Step(line[2:], status=int(value or 0))))
                elif line.strip():
                    steps[-1][1].shown.append(line)
    return steps


def _pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def _install(folder: Path, site: Path) -> None:
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--quiet",
         "--upgrade", "--target", str(site), str(folder)],
        capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr


def _uninstall(site: Path) -> None:
    shutil.rmtree(site)
    site.mkdir()


@pytest.mark.slow  # about a minute: two pip installs and a dozen commands
def test_the_walk_through_runs_as_written(tmp_path):
    site, cwd = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    cwd.mkdir()
    installed_from, changed = None, False
    steps = walk_through()
    assert sum(kind == "run" for kind, _ in steps) >= 10, "the walk-through was not found"
    for kind, step in steps:
        if kind == "file":
            path, body = step
            (cwd / path).parent.mkdir(parents=True, exist_ok=True)
            (cwd / path).write_text(body)
            changed = True
            continue
        words = shlex.split(step.command)
        if words[0] == "cd":
            cwd = cwd / words[1]
            continue
        if words[:2] == ["pip", "install"]:
            installed_from, changed = cwd, True
            continue
        if words[:2] == ["pip", "uninstall"]:
            _uninstall(site)
            installed_from = None
            continue
        if installed_from is not None and changed:
            _install(installed_from, site)
            changed = False
        if words[0] == "geobench":
            out = run_cli(words[1:], cwd, site, autoload=True,  # cwd off sys.path, as the
                          extra_env={"COLUMNS": "200", "PYTHONSAFEPATH": "1"})  # script has it
        else:
            out = subprocess.run(["bash", "-c", step.command], cwd=cwd, capture_output=True,
                                 text=True, timeout=60)
        lines = (out.stdout + out.stderr).splitlines()
        assert out.returncode == step.status, (step.command, out.stdout, out.stderr)
        for shown in step.shown:
            assert any(_pattern(shown).fullmatch(line) for line in lines), \
                (step.command, shown, lines)


def test_the_snippets_outside_the_walk_through_run():
    """The other Python blocks of docs/plugins.md, run with a ``register`` that records
    what it is given (the names a snippet takes from its surroundings defined here)."""
    from pydantic import Field

    from geobench.params import IMAGES, Params

    class MyParams(Params):
        width: int = Field(16, ge=1)
        norm: str = "none"

    text = GUIDE.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    others = text[:start] + text[end:]
    blocks = [body for _, _, lang, body in BLOCK.findall(others) if lang == "python"]
    assert len(blocks) >= 3
    registered, namespace = [], {}
    for body in blocks:
        namespace = {"register": lambda *a, **kw: registered.append((a, kw)),
                     "build": lambda params, ctx: None, "MyParams": MyParams}
        exec(compile(body, str(GUIDE), "exec"), namespace)
        if "MyOptimizerParams" in namespace:
            model = namespace["MyOptimizerParams"]
            model.model_rebuild(_types_namespace=namespace)  # its names live in the snippet
            opt = model(lr=0.1, mirror_map={"name": "euclidean"})
            assert opt.mirror_map == {"name": "euclidean"}
    ((name, *_), kw), = registered
    assert name == "my_backbone"
    assert kw["gives"](MyParams(width=7)) == {"features": 7}
    assert kw["needs"](MyParams(norm="batch"))[0] is IMAGES
    assert len(kw["needs"](MyParams(norm="batch"))) == 2 and len(kw["needs"](MyParams())) == 1
