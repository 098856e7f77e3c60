"""The one-line error of an exception raised in a cell: the plugin whose code raised it (the
innermost frame in a registered component's module or package), the file:line of the
innermost frame, shown from the module's top package down."""

from __future__ import annotations

import email.utils
import json
import traceback
from pathlib import Path

from geobench.contract.raised import failure_line, raised_at
from geobench.contract.registry import EmptyParams, Entry, Registry
from tests.core import raising_plugin


def _registry() -> Registry:
    reg = Registry()
    reg.add(Entry("heads", "raising_head", raising_plugin.build_raising_head, EmptyParams, "",
                  origin="raising (geobench-raising)"))
    return reg


def _caught(fn) -> BaseException:
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("it did not raise")


def _innermost_line(exc: BaseException) -> int:
    return traceback.extract_tb(exc.__traceback__)[-1].lineno


def test_the_plugin_whose_code_raised_and_the_raise_line():
    exc = _caught(lambda: raising_plugin.RaisingHead(4, 0)(None))
    source = Path(raising_plugin.__file__).read_text().splitlines()
    line = 1 + next(n for n, text in enumerate(source)
                    if 'raise RuntimeError("raising_head refuses to project")' in text)
    assert failure_line(exc, _registry()) == (
        "RuntimeError: raising_head refuses to project "
        f"[plugin raising (geobench-raising), tests/core/raising_plugin.py:{line}]")


def test_a_raise_inside_a_library_names_its_file_and_the_plugin_that_called_it():
    def plugin_code():  # a frame of this test module: no plugin's
        raising_plugin_calls_json()

    def raising_plugin_calls_json():
        json.loads("{")

    exc = _caught(plugin_code)
    inner = _innermost_line(exc)
    elsewhere = Registry()  # a component of another package: no frame is its plugin's
    elsewhere.add(Entry("heads", "other", email.utils.formatdate, EmptyParams, "",
                        origin="other (other-dist)"))
    assert raised_at(exc, elsewhere) == f"json/decoder.py:{inner}"
    assert raised_at(exc, elsewhere, "toy (geobench-toy)") == (
        f"plugin toy (geobench-toy), json/decoder.py:{inner}")
    # tests.core (the raising plugin's package) holds this module, tests.core.contract
    # (this module's) is the longer name: its plugin raised
    assert raised_at(exc, _registry()) == (
        f"plugin raising (geobench-raising), json/decoder.py:{inner}")
    reg = _registry()
    reg.add(Entry("heads", "here", plugin_code, EmptyParams, "", origin="here (tests)"))
    assert raised_at(exc, reg) == f"plugin here (tests), json/decoder.py:{inner}"


def test_without_a_traceback_the_line_is_the_exception_alone():
    assert failure_line(ValueError("bad\nsecond line"), _registry()) == "ValueError: bad"
    assert raised_at(ValueError("bad")) == ""
