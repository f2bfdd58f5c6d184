"""The pandas meaning of each declared check (`foodtaster.contract.checks`): the oracle's.

pandera's pandas backend is the reference for what a check means (`foodtaster_dev.oracle`
judges a message with it): a check pandera has built in means what pandera's does, and one it
lacks is written here once and registered with pandera, so a contract can name it in a
`pa.Field`. `PANDAS` records, by check name, the pandera check a contract writes for it;
`foodtaster.engine.judging.rules` gives each its Spark meaning, and the differential tests hold
the two to the same verdict.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Context, Decimal, localcontext
from typing import Any

import pandas as pd
import pandera.pandas as pa  # pandera must be imported before extensions
from pandera.api.extensions import register_check_method

from foodtaster.contract.checks import COMPARISONS, Meanings, MultipleOf

# ISO-8601 date-time with a zone: `Z` or an offset within ±18:00; up to microseconds.
# Offsets stop at 18 hours as java.time's do: Spark writes a timestamp with a larger offset
# as null, which a valid row must never hold (clocks use -12:00..+14:00).
# Unanchored: Python matches it with fullmatch, Java between `^` and `\z`.
ISO_TIMESTAMP_PATTERN = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-7]):[0-5][0-9]|[+-]18:00)"
)
_ISO_TIMESTAMP = re.compile(ISO_TIMESTAMP_PATTERN)


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

    @register_check_method(statistics=["value"], check_type="element_wise")
    def multiple_of(number: object, *, value: int | float) -> bool:
        """JSON Schema's multipleOf (docs/decisions/044): a double's quotient is a whole double;
        an integer or a decimal is a multiple of the divisor as written, exactly."""
        if isinstance(number, float):
            return bool(number / value % 1 == 0)
        exact = Decimal(number) if isinstance(number, Decimal) else Decimal(int(number))  # type: ignore[call-overload]
        with localcontext(Context(prec=100)):  # no rounding: 64 bits by 18 digits fit
            return exact % MultipleOf(value).exact == 0

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
        compare = COMPARISONS[then_check].test
        holds = df[then_column].map(lambda v: _is_number(v) and bool(compare(v, then_value)))
        return ~applies | holds.astype(bool)


try:
    _register()
except ValueError as err:  # registering twice (module reloaded) is harmless
    if "already" not in str(err):
        raise


# The pandera check a contract writes for each declared check: pandera's own where it has one.
PANDAS: Meanings[Any] = Meanings("pandas (pandera, the oracle)")
for _name in (*COMPARISONS, "in_range", "isin", "notin", "str_matches", "str_contains", "str_startswith",
              "str_endswith", "str_length", "iso_timestamp", "multiple_of"):
    PANDAS.add(_name, getattr(pa.Check, _name))
