"""One hook per component kind, and one for commands.

A plugin implements ``register_<kind>(register)`` and calls ``register(name, factory,
params=<pydantic model>, doc="...")`` once per component; a metric also passes
``fields={field: FieldDoc(description, unit, direction)}`` (keys may be shell patterns such
as ``acc_*``). Any component may pass ``gives`` and ``needs``: the facts it makes true of
its arm and what it needs of the others (``geobench.contract.needs``), checked on every
grid point before any cell trains. ``register_commands(cli)`` adds subcommands with
``cli.add(name, summary, arguments, main)``: ``arguments(parser)`` adds the command's options
to its argparse parser, ``main(args) -> exit status`` runs it on the parsed ones. Keep a
plugin's top-level imports light (pluggy, geobench.hookspecs) and import its implementation
inside the hooks, or name it with ``lazy("module:function")``: every command, ``--help``
included, loads the plugin modules.
"""

import importlib
from collections.abc import Callable
from typing import Any

import pluggy

KINDS = (
    "datasets",
    "augmentations",
    "backbones",
    "heads",
    "objectives",
    "optimizers",
    "mirror_maps",
    "metrics",
    "executors",
    "inits",
    "loggers",
)

hookspec = pluggy.HookspecMarker("geobench")
hookimpl = pluggy.HookimplMarker("geobench")


class Specs:
    @hookspec
    def register_datasets(self, register):
        """Register datasets: factory(params, ctx) -> geobench.api.Data."""

    @hookspec
    def register_augmentations(self, register):
        """Register augmentations: factory(params, ctx) -> Augmentation."""

    @hookspec
    def register_backbones(self, register):
        """Register backbones: factory(params, ctx) -> nn.Module with feature_dim."""

    @hookspec
    def register_heads(self, register):
        """Register projection heads: factory(params, ctx) -> nn.Module with out_dim."""

    @hookspec
    def register_objectives(self, register):
        """Register objectives: factory(params, ctx) -> geobench.api.Objective."""

    @hookspec
    def register_optimizers(self, register):
        """Register optimizers: factory(params, ctx) -> torch.optim.Optimizer over ctx.model."""

    @hookspec
    def register_mirror_maps(self, register):
        """Register mirror maps: factory(params, ctx) -> MirrorMap."""

    @hookspec
    def register_metrics(self, register):
        """Register metrics: factory(params, ctx) -> geobench.api.Metric."""

    @hookspec
    def register_executors(self, register):
        """Register executors: factory(params, ctx) -> geobench.api.Executor."""

    @hookspec
    def register_inits(self, register):
        """Register initialisations: factory(params, ctx) -> geobench.api.Init."""

    @hookspec
    def register_loggers(self, register):
        """Register experiment trackers: factory(params, ctx) -> geobench.api.Logger."""

    @hookspec
    def register_commands(self, cli):
        """Add subcommands: cli.add(name, summary, arguments, main) with
        arguments(parser: argparse.ArgumentParser) -> None and main(args) -> int."""


HOOKS = tuple(name for name in vars(Specs) if name.startswith("register_"))


def lazy(target: str) -> Callable[..., Any]:
    """``"module:function"`` as a function that imports its module on first call, so a
    hook can name a command's ``arguments`` and ``main`` without importing them."""
    module, _, name = target.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call
