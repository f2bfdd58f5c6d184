"""Checks a contract may use beyond pandera's built-ins, registered with pandera.

Each is written once here for pandera's pandas backend, which is the reference
for what the rule means; `foodtaster.engine.judging.rules` evaluates the same rule per row on
Spark, and the differential test holds the two to the same verdict.
"""

from __future__ import annotations

import re
from datetime import datetime

import pandas as pd
import pandera.pandas as pa  # noqa: F401  (pandera must be imported before extensions)
from pandera.api.extensions import register_check_method

# ISO-8601 date-time with a zone: `Z` or an offset within ±18:00; up to microseconds.
# Offsets stop at 18 hours as java.time's do: Spark writes a timestamp with a larger offset
# as null, which a valid row must never hold (clocks use -12:00..+14:00).
# Unanchored: Python matches it with fullmatch, Java between `^` and `\z`.
ISO_TIMESTAMP_PATTERN = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-7]):[0-5][0-9]|[+-]18:00)"
)
_ISO_TIMESTAMP = re.compile(ISO_TIMESTAMP_PATTERN)
COMPARISONS = {
    "greater_than": lambda s, v: s > v,
    "greater_than_or_equal_to": lambda s, v: s >= v,
    "less_than": lambda s, v: s < v,
    "less_than_or_equal_to": lambda s, v: s <= v,
    "equal_to": lambda s, v: s == v,
    "not_equal_to": lambda s, v: s != v,
}


def is_iso_timestamp(text: object) -> bool:
    """The shape of ISO-8601 with a zone, and a real calendar date and clock time."""
    if not isinstance(text, str) or not _ISO_TIMESTAMP.fullmatch(text):
        return False
    try:
        datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


def _is_number(value: object) -> bool:
    """A JSON number: bools are not numbers, however Python ranks them."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _register() -> None:
    @register_check_method(statistics=[], check_type="element_wise")
    def iso_timestamp(value: object) -> bool:
        return is_iso_timestamp(value)

    @register_check_method(
        statistics=["if_column", "if_in", "then_column", "then_check", "then_value"],
        supported_types=pd.DataFrame,
    )
    def conditional(
        df: pd.DataFrame, *, if_column: str, if_in: list, then_column: str, then_check: str,
        then_value: object,
    ) -> pd.Series:
        """When `if_column` is one of `if_in`, `then_column` must pass `then_check(then_value)`."""
        if if_column not in df:
            return pd.Series(True, index=df.index)
        applies = df[if_column].isin(if_in).fillna(False).astype(bool)
        if then_column not in df:
            return ~applies
        compare = COMPARISONS[then_check]
        holds = df[then_column].map(lambda v: _is_number(v) and bool(compare(v, then_value)))
        return ~applies | holds.astype(bool)


try:
    _register()
except ValueError as err:  # registering twice (module reloaded) is harmless
    if "already" not in str(err):
        raise
