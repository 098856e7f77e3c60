"""The core's tests run without the bundled plugins: plugin autoload is off in this process
(``GEOBENCH_DISABLE_PLUGIN_AUTOLOAD=1``) and the test-local toy plugin (``toy_plugin.py``)
is one of the core's built-ins, in this process and in the worker processes it starts.
A CLI subprocess inherits autoload off; it loads the toy plugin when asked
(``run_cli(..., site, toy=True)``, see tests/conftest.py ``cli_env``).
Tests that need the bundled plugins (the shipped suites, the figure commands, the
scaffold's example suite) are in tests/suites.
"""

from __future__ import annotations

import pytest

from geobench.contract import manager as loader
from tests.conftest import AUTOLOAD_OFF
from tests.core import toy_plugin


def _reload() -> None:
    """Forget the process-wide plugin manager and registry: the next use loads them anew."""
    loader.plugins.cache_clear()
    loader.registry.cache_clear()


@pytest.fixture(scope="package", autouse=True)
def core_and_toy_plugins_only():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(AUTOLOAD_OFF, "1")
        mp.delenv("GEOBENCH_PLUGINS", raising=False)
        mp.setenv(toy_plugin.BUILTIN_ENV, "1")  # spawned workers: see toy_plugin
        mp.setitem(loader.BUILTINS, "toy", toy_plugin.__name__)
        _reload()
        yield
    _reload()

