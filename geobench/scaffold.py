"""``geobench new-plugin NAME``: a plugin package that installs and passes its tests as is.

``write_plugin(name, folder)`` writes ``<folder>/<name>/``: a setuptools ``pyproject.toml``
declaring the ``geobench`` entry point, the module ``<module>`` (NAME lower-cased, ``-`` ->
``_``) registering an example head ``<module>_scaled_tanh`` and an example mirror map
``<module>_quadratic``, a smoke suite using both, its tests and a README.

The package's files are the templates under ``geobench/templates/plugin/`` (package data):
the plugin ``geobench new-plugin geobench-plugin-template`` writes, each file named with a
trailing ``-tpl`` (so that no tool takes them for the repository's own Python files or
``pyproject.toml``). Rendering drops the suffix and replaces ``NAME_TOKEN`` and
``MODULE_TOKEN`` by NAME and its module name, in paths and texts alike.
"""

from __future__ import annotations

import keyword
import re
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from importlib.resources import files
from importlib.util import find_spec
from pathlib import Path

from geobench.contract.errors import RegistryError
from geobench.contract.manager import BUILTINS, GROUP
from geobench.publish.output import write_files

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
MAX_LENGTH = 40  # the generated code keeps to 100-character lines
NAME_TOKEN = "geobench-plugin-template"  # the plugin name in the templates
MODULE_TOKEN = "geobench_plugin_template"  # its module name, a valid identifier
TOKENS = re.compile(f"{NAME_TOKEN}|{MODULE_TOKEN}")
SUFFIX = "-tpl"


def template_files() -> dict[str, str]:
    """The templates: path under ``geobench/templates/plugin`` (``/``-separated) -> text."""
    found: dict[str, str] = {}

    def walk(folder, prefix: str) -> None:  # an importlib.resources Traversable
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            else:
                found[prefix + entry.name] = entry.read_text(encoding="utf-8")

    walk(files("geobench") / "templates" / "plugin", "")
    return found


def render(name: str) -> dict[str, str]:
    """The files of plugin ``name`` (not checked): path in its package folder -> text."""
    values = {NAME_TOKEN: name, MODULE_TOKEN: module_name(name)}

    def fill(text: str) -> str:
        return TOKENS.sub(lambda match: values[match.group()], text)

    return {fill(path.removesuffix(SUFFIX)): fill(text)
            for path, text in template_files().items()}


def module_name(name: str) -> str:
    """The plugin's module and entry-point name: NAME lower-cased, ``-`` -> ``_``."""
    return name.lower().replace("-", "_")


def check_name(name: str) -> str:
    """The module name of plugin ``name``; ``RegistryError`` (one line) if the name is not
    allowed or its module, entry point or distribution already exists."""
    if not NAME.fullmatch(name) or len(name) > MAX_LENGTH:
        raise RegistryError(f"plugin name {name!r}: a letter, then letters, digits, '_' or '-', "
                            f"at most {MAX_LENGTH} characters (e.g. my-plugin)")
    module = module_name(name)
    if keyword.iskeyword(module):
        raise RegistryError(f"plugin name {name!r}: module name {module!r} is a Python keyword")
    folders = {path.split("/")[0] for path in template_files() if "/" in path} - {MODULE_TOKEN}
    if module in folders:
        raise RegistryError(f"plugin name {name!r}: {module!r} is a folder of the package "
                            "(its tests or suites); choose another name")
    taken = {ep.name for ep in entry_points(group=GROUP)} | set(BUILTINS)
    if module in taken:
        raise RegistryError(f"plugin name {name!r}: a geobench plugin {module!r} already "
                            f"exists; plugins taken: {', '.join(sorted(taken))}")
    if find_spec(module) is not None:
        raise RegistryError(f"plugin name {name!r}: a module {module!r} is already "
                            "importable; choose another name")
    try:
        distribution(name)
    except PackageNotFoundError:
        return module
    raise RegistryError(f"plugin name {name!r}: a distribution of that name is already "
                        "installed; choose another name")


def write_plugin(name: str, folder: str | Path = ".") -> Path:
    """Write the plugin package ``<folder>/<name>/`` and return its path; nothing is written
    if ``name`` is refused or ``<folder>/<name>`` is a non-empty folder (``RegistryError``)."""
    check_name(name)
    target = Path(folder) / name
    for path in (Path(folder), target):
        if path.exists() and not path.is_dir():
            raise RegistryError(f"{path} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        raise RegistryError(f"{target} exists and is not empty; choose another name or folder")
    write_files({target / path: text for path, text in render(name).items()})
    return target
