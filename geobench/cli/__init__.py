"""geobench: run suites of representation-geometry benchmarks and publish their leaderboards.

Plugins add commands of their own (`geobench plugins` lists what each one provides)."""

from __future__ import annotations

import argparse
import os
import sys

from geobench.cli import (
    inspect_commands,
    new_plugin,
    register_command,
    report_commands,
    run_commands,
    site_command,
    verify_command,
)
from geobench.cli.command import Command
from geobench.cli.plugin_commands import plugin_commands, run_plugin_command
from geobench.contract.errors import RegistryError
from geobench.publish.output import OutputError
from geobench.run.store import StoreError
from geobench.suite.yamlio import SuiteError

ORDER = ("run", "list", "show", "preflight", "validate", "register", "results", "leaderboard",
         "claims", "verify", "site", "collect", "plugins", "new-plugin")
"""geobench's own commands, in the order ``--help`` lists them."""
GROUPS = (run_commands, inspect_commands, register_command, report_commands, verify_command,
          site_command, new_plugin)
CORE = {c.name: c for module in GROUPS for c in module.COMMANDS}
COMMANDS = {name: CORE[name] for name in ORDER}


def parser(extra: dict[str, Command] | None = None) -> argparse.ArgumentParser:
    """``geobench``'s parser: a subparser per own command; plugin commands (``extra``) are
    listed, and parse their own arguments when run."""
    ap = argparse.ArgumentParser(prog="geobench", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.arguments(sub.add_parser(command.name, help=command.summary))
    for name, command in (extra or {}).items():
        sub.add_parser(name, help=command.summary, add_help=False)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own = COMMANDS.get(argv[0]) if argv else None
    extra = {} if own is not None and not own.loads_plugins else plugin_commands(COMMANDS)
    try:
        if argv and argv[0] in extra:
            return run_plugin_command(extra[argv[0]], argv[1:])
        args = parser(extra).parse_args(argv)
        return COMMANDS[args.command].run(args)
    except (SuiteError, RegistryError, StoreError, OutputError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished cells are stored; rerun to complete the rest",
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # a reader such as `head` stopped reading: stop writing quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
