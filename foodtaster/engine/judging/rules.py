"""The contract's meaning on Spark: each check of the model as a Spark condition, each JSON
type as a Spark type (what the strict parser is asked for: `parser_spec`).

The contract model (`foodtaster.contract.model`) says what a check *is*; this module says
what it *means* on Spark, one entry a check, as pandera's `backends/pyspark` does for its
`api/`. `row_checks` turns each rule into a reason column; the pandas oracle
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

from foodtaster.checks import COMPARISONS
from foodtaster.contract.model import (
    COMPARISON_WORDS,
    FieldRule,
    JsonType,
    render,
)
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


# Column checks: the model's check name -> (Spark condition that passes, message for a person).
ColumnCheck = Callable[[Column, dict[str, Any]], tuple[Column, str]]


def _string_length(value: Column, s: dict[str, Any]) -> tuple[Column, str]:
    length = F.char_length(value)
    if s.get("exact_value") is not None:
        return length == s["exact_value"], f"must be exactly {s['exact_value']} characters"
    ok = F.lit(True)
    bounds = []
    if s.get("min_value") is not None:
        ok = ok & (length >= s["min_value"])
        bounds.append(f"at least {s['min_value']}")
    if s.get("max_value") is not None:
        ok = ok & (length <= s["max_value"])
        bounds.append(f"at most {s['max_value']}")
    return ok, f"must be {' and '.join(bounds)} characters long"


def _in_range(value: Column, s: dict[str, Any]) -> tuple[Column, str]:
    low = value >= s["min_value"] if s.get("include_min", True) else value > s["min_value"]
    high = value <= s["max_value"] if s.get("include_max", True) else value < s["max_value"]
    return low & high, f"must be in range {s['min_value']}..{s['max_value']}"


def _iso_timestamp(value: Column, s: dict[str, Any]) -> tuple[Column, str]:
    # The written column's value (`field_outputs`): Spark computes it once a row for both.
    return layers.iso_timestamp(value).isNotNull(), "must be an ISO-8601 timestamp with a zone offset or Z"


def python_regex(pattern: str) -> str:
    """A Java regex that reads a Python pattern as Python does: `\\n` is the only line end
    (so `$` does not match before a final `\\r`), and `\\d`, `\\w` are Unicode classes."""
    return "(?dU)" + pattern


def _comparison(name: str) -> ColumnCheck:
    def compare(value: Column, s: dict[str, Any]) -> tuple[Column, str]:
        (bound,) = s.values()
        return COMPARISONS[name](value, bound), f"must be {COMPARISON_WORDS[name]} {render(bound)}"

    return compare


COLUMN_CHECKS: dict[str, ColumnCheck] = {
    **{name: _comparison(name) for name in COMPARISON_WORDS},
    "in_range": _in_range,
    "isin": lambda v, s: (
        v.isin(*s["allowed_values"]),
        "must be one of " + ", ".join(map(str, s["allowed_values"])),
    ),
    "notin": lambda v, s: (
        ~v.isin(*s["forbidden_values"]),
        "must not be one of " + ", ".join(map(str, s["forbidden_values"])),
    ),
    # pandera's str_matches is Python's re.match: anchored at the start only
    "str_matches": lambda v, s: (
        F.regexp_like(v, F.lit(python_regex("^(?:" + s["pattern"] + ")"))), f"must match {s['pattern']}"
    ),
    "str_contains": lambda v, s: (
        F.regexp_like(v, F.lit(python_regex(s["pattern"]))), f"must contain a match of {s['pattern']}"
    ),
    "str_startswith": lambda v, s: (v.startswith(s["string"]), f"must start with {s['string']}"),
    "str_endswith": lambda v, s: (v.endswith(s["string"]), f"must end with {s['string']}"),
    "str_length": _string_length,
    "iso_timestamp": _iso_timestamp,
}
