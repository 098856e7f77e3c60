"""The core's own plugin (geobench.components.builtins): there with autoload off, and what it
registers."""

from geobench.contract.manager import plugins, registry


def test_the_core_plugin_registers_its_components():
    reg = registry()
    core = {kind: sorted(name for name, e in entries.items() if e.origin == "core (geobench)")
            for kind, entries in reg.entries.items()}
    assert core == {
        "datasets": [], "augmentations": [], "backbones": [], "objectives": [], "inits": [],
        "mirror_maps": [], "executors": ["local", "pool", "ray", "slurm"],
        "heads": ["identity", "linear", "mlp"], "optimizers": ["adam", "adamw", "lars", "sgd"],
        "metrics": ["effective_rank", "eval_loss", "knn", "linear_probe", "nccc"],
        "loggers": ["tensorboard", "wandb"]}
    assert plugins().info["core"].hooks == ("register_executors", "register_heads",
                                            "register_loggers", "register_metrics",
                                            "register_optimizers")
    assert all(entry.doc for entries in reg.entries.values() for entry in entries.values())
