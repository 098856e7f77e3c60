"""One registration hook per component kind, and one for commands."""

import inspect

from geobench.contract.hooks import HOOKS, KINDS, Specs


def test_one_register_hook_per_kind_and_one_for_commands():
    assert set(HOOKS) == {f"register_{kind}" for kind in KINDS} | {"register_commands"}
    assert len(KINDS) == len(set(KINDS))


def test_hooks_take_one_argument():
    for hook in HOOKS:
        params = list(inspect.signature(getattr(Specs, hook)).parameters)
        assert params == ["self", "cli" if hook == "register_commands" else "register"], hook
