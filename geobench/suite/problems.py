"""Every independent problem of a suite file at once: checks that do not depend on each
other (each arm, each component spec, each profile, each claim) run in ``Problems.check``,
and ``Problems.raise_found`` raises them together, one line each, in file order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from geobench.suite.yamlio import SuiteError


class SuiteErrors(SuiteError):
    """Several problems of one suite file: ``errors``, one line each, in file order (those
    without a line, such as ``--set``'s, last)."""

    def __init__(self, errors: list[SuiteError]) -> None:
        unique = list({str(e): e for e in errors}.values())
        self.errors = sorted(unique, key=lambda e: (e.line is None, e.line or 0))
        ValueError.__init__(self, "\n".join(str(e) for e in self.errors))
        self.line = self.errors[0].line


class Problems:
    """The problems found so far by independent checks of one file."""

    def __init__(self) -> None:
        self.found: list[SuiteError] = []

    def add(self, error: SuiteError) -> None:
        """Keep ``error`` (one, or ``SuiteErrors``)."""
        self.found += error.errors if isinstance(error, SuiteErrors) else [error]

    @contextmanager
    def check(self) -> Iterator[None]:
        """Run one independent check: its ``SuiteError`` (or errors) is kept, not raised."""
        try:
            yield
        except SuiteError as exc:
            self.add(exc)

    def passes(self, check: Callable[[], object]) -> bool:
        """Run ``check`` as ``check()`` does; whether it found nothing."""
        with self.check():
            check()
            return True
        return False

    def raise_found(self) -> None:
        """Raise what was found (``combined``); nothing when nothing was."""
        if self.found:
            raise combined(self.found)


def combined(errors: list[SuiteError]) -> SuiteError:
    """The one error as it is, several as ``SuiteErrors``."""
    return errors[0] if len({str(e) for e in errors}) == 1 else SuiteErrors(errors)
