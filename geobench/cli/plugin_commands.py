"""Plugins' commands: what ``register_commands(cli)`` receives, the commands every loaded
plugin registers, and running one once its plugin has loaded whole."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection

from geobench.cli.command import Command
from geobench.contract.errors import RegistryError


class PluginCommands:
    """What ``register_commands(cli)`` receives: ``cli.add(name, summary, arguments,
    main)``, where ``arguments(parser)`` adds the command's options (``geobench.figures``
    has the ones figure commands share) and ``main(args)`` runs it on the parsed ones."""

    def __init__(self, plugin: str, commands: dict[str, Command], taken: Collection[str]
                 ) -> None:
        self.plugin, self.commands, self.taken = plugin, dict(commands), taken

    def add(self, name: str, summary: str, arguments: Callable[[argparse.ArgumentParser], None],
            main: Callable[[argparse.Namespace], int]) -> None:
        if name in self.taken or name in self.commands:
            raise RegistryError(f"command {name!r} is already defined")
        self.commands[name] = Command(name, summary, arguments, main, self.plugin)


def plugin_commands(taken: Collection[str]) -> dict[str, Command]:
    """Every loaded plugin's commands (none may take a name in ``taken``); a plugin whose
    hook fails or redefines a command is skipped with a warning."""
    from geobench.contract.manager import describe_failure, plugins

    loaded, commands = plugins(), {}
    for name, info in list(loaded.info.items()):
        if "register_commands" not in info.hooks:
            continue
        staged = PluginCommands(name, commands, taken)
        try:
            loaded.call(name, "register_commands", cli=staged)
        except (Exception, SystemExit) as exc:
            loaded.drop(name, "register_commands: " + (
                str(exc) if isinstance(exc, RegistryError) else describe_failure(exc)))
            continue
        commands = staged.commands
    return commands


def run_plugin_command(command: Command, argv: list[str]) -> int:
    """Parse ``argv`` with the command's arguments and run it, once its plugin has loaded
    whole (components included)."""
    from geobench.contract.manager import plugins, registry

    registry()
    if command.plugin not in plugins().info:
        print(f"geobench {command.name}: plugin {command.plugin!r} was skipped (see the "
              "warning above)", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=f"geobench {command.name}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    command.arguments(parser)
    return command.run(parser.parse_args(argv))
