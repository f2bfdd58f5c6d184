"""The contract's meaning on Spark: each check of the model as a Spark condition, each JSON
type as a Spark type (what the strict parser is asked for: `parser_spec`).

The check registry (`foodtaster.contract.checks`) says what a check *is*; this module says
what it *means* on Spark, one registration a check (`SPARK`), as pandera's `backends/pyspark`
does for its `api/`. `row_checks` turns each rule into a reason column; the pandas oracle
(`foodtaster_dev.oracle`) gives the reference meaning, and `tests/integration/test_differential*.py`
hold the two to the same verdict.

A wrong type is a `type` reason; a missing field is `required`; a JSON null is `not_nullable`;
a number its column cannot hold (an integer beyond 64 bits, a double that overflows or
underflows, a decimal's digits) is `out_of_range`, never a null, an infinity or a rounding.
Value checks run only on values of the right type, as pandera skips nulls in checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    StringType,
    TimestampType,
)

from foodtaster.contract import checks
from foodtaster.contract.checks import COMPARISONS, Meanings
from foodtaster.contract.model import FieldRule, JsonType
from foodtaster.engine.judging import layers

_SPARK_TYPES: dict[str, DataType] = {
    "string": StringType(), "number": DoubleType(), "integer": LongType(), "boolean": BooleanType(),
    "date": DateType(), "object": StringType(), "array": StringType(), "json": StringType(),
}


def spark_type(json_type: JsonType) -> DataType:
    """The typed value's Spark type (an array's: its elements' output, built apart)."""
    if json_type.name == "decimal":
        assert json_type.precision is not None and json_type.scale is not None
        return DecimalType(json_type.precision, json_type.scale)
    return _SPARK_TYPES[json_type.name]


def parsed_type(json_type: JsonType) -> DataType:
    """What the strict parser returns: a date as its checked text, an object as no value."""
    return StringType() if json_type.name in ("date", "object") else spark_type(json_type)


def output_type(rule: FieldRule) -> DataType:
    """A leaf's written type: its typed value, a timestamp for an `iso_timestamp` string."""
    return TimestampType() if rule.is_timestamp else spark_type(rule.json_type)


# The Spark meaning of each declared check (`foodtaster.contract.checks`): a condition on the
# value's column, of a JSON type (an array's length: integer), that holds where it passes. The
# reason's words are the declaration's.
ColumnMeaning = Callable[[Column, Any, str], Column]
SPARK: Meanings[ColumnMeaning] = Meanings("Spark columns")


def _comparison(c: checks.Comparison) -> ColumnMeaning:
    return lambda value, a, json_type: c.test(value, getattr(a, c.argument))


for _name, _c in COMPARISONS.items():
    SPARK.add(_name, _comparison(_c))


@SPARK.register("in_range")
def _in_range(value: Column, a: checks.InRange, json_type: str) -> Column:
    low = value >= a.min_value if a.include_min else value > a.min_value
    high = value <= a.max_value if a.include_max else value < a.max_value
    return low & high


@SPARK.register("isin")
def _isin(value: Column, a: checks.Allowed, json_type: str) -> Column:
    return value.isin(*a.allowed_values)


@SPARK.register("notin")
def _notin(value: Column, a: checks.Forbidden, json_type: str) -> Column:
    return ~value.isin(*a.forbidden_values)


@SPARK.register("str_matches")
def _str_matches(value: Column, a: checks.Pattern, json_type: str) -> Column:
    # pandera's str_matches is Python's re.match: anchored at the start only
    return F.regexp_like(value, F.lit(python_regex("^(?:" + a.pattern + ")")))


@SPARK.register("str_contains")
def _str_contains(value: Column, a: checks.Pattern, json_type: str) -> Column:
    return F.regexp_like(value, F.lit(python_regex(a.pattern)))


@SPARK.register("str_startswith")
def _str_startswith(value: Column, a: checks.Text, json_type: str) -> Column:
    return value.startswith(a.string)


@SPARK.register("str_endswith")
def _str_endswith(value: Column, a: checks.Text, json_type: str) -> Column:
    return value.endswith(a.string)


@SPARK.register("str_length")
def _str_length(value: Column, a: checks.Length, json_type: str) -> Column:
    length = F.char_length(value)
    if a.exact_value is not None:
        return length == a.exact_value
    ok = F.lit(True)
    if a.min_value is not None:
        ok = ok & (length >= a.min_value)
    if a.max_value is not None:
        ok = ok & (length <= a.max_value)
    return ok


@SPARK.register("iso_timestamp")
def _iso_timestamp(value: Column, a: checks.NoArguments, json_type: str) -> Column:
    # The written column's value (`field_outputs`): Spark computes it once a row for both.
    return layers.iso_timestamp(value).isNotNull()


@SPARK.register("multiple_of")
def _multiple_of(value: Column, a: checks.MultipleOf, json_type: str) -> Column:
    if json_type == "number":  # a double: its quotient is a whole double (`% 1` is exact)
        return value / a.value % 1 == 0
    # a long or a decimal by a decimal: Spark's `%` is exact
    return value % F.lit(a.exact) == 0


def python_regex(pattern: str) -> str:
    """A Java regex that reads a Python pattern as Python does: `\\n` is the only line end
    (so `$` does not match before a final `\\r`), and `\\d`, `\\w` are Unicode classes."""
    return "(?dU)" + pattern
