"""One base for every error Foodtaster raises on purpose, and what the command line exits with.

Each error says what happened and what to do; `exit_code` is the `foodtaster` command's
exit status for it. The categories keep the builtin base each error had, so code that
catches a `ValueError` or a `LookupError` still does.

A job that refuses its run (`refusal`) exits with REFUSED_EXIT_CODE and says why on its last
line, after REFUSED_PREFIX: the orchestrator then fails the task at once, since a retry of the
same run gets the same answer, and retries only what may pass next time (a `Failed`, a crash).
"""

from __future__ import annotations


class FoodtasterError(Exception):
    """Something Foodtaster refuses or cannot do; the message says why."""

    exit_code = 1


class UsageError(FoodtasterError, ValueError):
    """The request or the configuration is wrong: the message says what to change."""

    exit_code = 2


class NotFound(FoodtasterError, LookupError):
    """What was asked for is not in the lake."""

    exit_code = 1


class Busy(FoodtasterError, RuntimeError):
    """A run is writing the batch now: try again when it has finished."""

    exit_code = 3


class Failed(FoodtasterError, RuntimeError):
    """A step could not finish as it must (counts that do not add up, a delivery that failed)."""

    exit_code = 1


REFUSED_EXIT_CODE = 4  # a job's exit status when it refused its run; argparse's usage error is 2
REFUSED_PREFIX = "REFUSED: "  # the refusing job's last line: this, then the reason and what to do


def refusal(err: BaseException) -> bool:
    """Whether a job's run ended in a refusal that a retry of the same run cannot change: the
    request or the configuration is wrong (a contract that cannot be read, a rerun of a redriven
    batch), what it names is not in the lake, or a live run of the same batch holds it (a retry
    would judge again what that run is judging now)."""
    return isinstance(err, UsageError | NotFound | Busy)
