"""Scenarios run as a chain, each starting from what the one before it left: once one fails,
the later ones would fail on its broken state and their errors would hide the cause, so
they are not run and say which scenario failed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future


class NotRun(Exception):
    """A scenario skipped because an earlier one in its chain failed."""


def run_chain(chain: Sequence[tuple[str, Callable[[], object], Future]]) -> None:
    """Run each (name, scenario, outcome) in order, setting its outcome: None, or what it
    raised. After a failure every later outcome is NotRun naming the failed scenario."""
    failed = None
    for name, scenario, outcome in chain:
        if failed is not None:
            outcome.set_exception(NotRun(f"not run: {failed} failed"))
            continue
        try:
            scenario()
        except BaseException as err:  # the test waiting on the outcome raises it
            outcome.set_exception(err)
            failed = name
        else:
            outcome.set_result(None)
