"""One shape for every command, geobench's own and a plugin's: a name, a one-line summary,
a function that adds its arguments to its parser, and one that runs it on the parsed
arguments and returns the exit status."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A ``geobench`` subcommand; ``plugin`` names the plugin that registered it (empty for
    geobench's own); ``loads_plugins``: whether ``geobench`` loads the plugins before it runs
    (a command that reads published files alone does not)."""

    name: str
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    plugin: str = ""
    loads_plugins: bool = True
