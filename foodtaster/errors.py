"""One base for every error Foodtaster raises on purpose, and what the command line exits with.

Each error says what happened and what to do; `exit_code` is the `foodtaster` command's
exit status for it. The categories keep the builtin base each error had, so code that
catches a `ValueError` or a `LookupError` still does.
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
