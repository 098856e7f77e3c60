"""``geobench new-plugin``: a plugin package that installs and tests as is."""

from __future__ import annotations

import argparse

from geobench.cli.command import Command
from geobench.contract.errors import RegistryError


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="distribution name, e.g. my-plugin")
    p.add_argument("--dir", default=".", help="folder to write NAME/ into (default: .)")


def new_plugin(args: argparse.Namespace) -> int:
    from geobench.scaffold import write_plugin

    try:
        target = write_plugin(args.name, args.dir)
    except OSError as exc:
        raise RegistryError(f"new-plugin: cannot write {exc.filename}: {exc.strerror}") from None
    print(f"wrote {target}\nnext:\n  cd {target} && pip install -e '.[test]' && pytest\n"
          "  geobench list heads\n  geobench validate suites/example.yaml")
    return 0


COMMANDS = [Command("new-plugin", "write a plugin package that installs as is", _arguments,
                    new_plugin)]
