"""Evaluate a pandera contract per row on Spark.

The rules are written once, in the pandera model. This module reads the model's
schema (columns, dtypes, nullability, checks and their statistics) and turns
each rule into a reason column, with the meaning pandera's pandas backend gives
it; `tests/integration/test_differential.py` holds the two to the same verdict.

Types are strict JSON types, given by the strict parser (`layers.parse`): a
string is only a JSON string, a number a JSON number, an integer a number
written without a fraction or exponent. A wrong type is a `type` reason; a
missing field is `required`; a JSON null is `not_nullable`; a number its column
cannot hold (an integer beyond 64 bits, a double that overflows or underflows)
is `out_of_range`, never a null or an infinity. Value checks run only on values
of the right type, as pandera skips nulls in checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandera.pandas as pa
from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    TimestampType,
)

from foodtaster.checks import COMPARISONS
from foodtaster.engine import layers
from foodtaster.engine.layers import FieldStatus
from foodtaster.engine.reasons import Check, check
from foodtaster.errors import UsageError

# What the value of an `out_of_range` field is, by the field's JSON type.
OUT_OF_RANGE_WORDS = {
    "integer": "is an integer beyond 64 bits (-9223372036854775808..9223372036854775807)",
    "number": "is a number no double holds: beyond ±1.8e308, or so close to 0 that it would read as 0",
}


class ContractError(UsageError):
    """The contract uses something the Spark evaluator cannot give pandera's meaning to."""


@dataclass(frozen=True)
class JsonType:
    name: str  # "string" | "number" | "integer" | "boolean"
    spark_type: DataType


def json_type_of(dtype: Any) -> JsonType:
    text = str(dtype).lower()
    if text.startswith(("string", "str", "object")):
        return JsonType("string", StringType())
    if text.startswith("bool"):
        return JsonType("boolean", BooleanType())
    if text.startswith(("int", "uint")):
        return JsonType("integer", LongType())
    if text.startswith("float"):
        return JsonType("number", DoubleType())
    raise ContractError(f"dtype {dtype} has no JSON type here (use str, int, float or bool)")


def _render(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def rule_id(column: str | None, check_name: str, statistics: dict[str, Any]) -> str:
    """A stable id, e.g. `amount.greater_than_or_equal_to(0)`, `order_id.str_length(min_value=1)`."""
    scalars = {
        k: v for k, v in statistics.items()
        if v is not None and not isinstance(v, list | tuple | set | dict) and k != "pattern"
    }
    if len(scalars) == 1:
        args = f"({_render(next(iter(scalars.values())))})"
    elif scalars:
        args = "(" + ",".join(f"{k}={_render(v)}" for k, v in scalars.items()) + ")"
    else:
        args = ""
    return f"{column}.{check_name}{args}" if column else f"{check_name}{args}"


# Column checks: pandera check name -> (Spark condition that passes, message for a person).
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


COMPARISON_WORDS = {
    "greater_than": ">", "greater_than_or_equal_to": ">=", "less_than": "<",
    "less_than_or_equal_to": "<=", "equal_to": "==", "not_equal_to": "!=",
}


def _comparison(name: str) -> ColumnCheck:
    def compare(value: Column, s: dict[str, Any]) -> tuple[Column, str]:
        (bound,) = s.values()
        return COMPARISONS[name](value, bound), f"must be {COMPARISON_WORDS[name]} {_render(bound)}"

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


@dataclass(frozen=True)
class FieldRule:
    name: str
    json_type: JsonType
    required: bool
    nullable: bool
    unique: bool
    checks: tuple[tuple[str, dict[str, Any]], ...]

    @property
    def output_type(self) -> DataType:
        if any(name == "iso_timestamp" for name, _ in self.checks):
            return TimestampType()
        return self.json_type.spark_type


@dataclass(frozen=True)
class PythonCheck:
    """A check registered with pandera (`register_check_method`) that Spark cannot express:
    pandera's own Check runs on the field's values in a pandas UDF (`with_python_checks`)."""

    field: str
    name: str
    statistics: dict[str, Any]
    dtype: str  # the model's dtype of the field, as the reference types its one-row frame
    pandera_check: pa.Check = dataclasses.field(compare=False, repr=False)

    @property
    def column(self) -> str:
        """The boolean column of its verdict: true passes, false fails, null not judged."""
        return f"_py_{self.field}_{self.name}"

    @property
    def rule(self) -> str:
        return rule_id(self.field, self.name, self.statistics)


@dataclass(frozen=True)
class Contract:
    """A pandera model read for row-level evaluation on Spark."""

    name: str
    fields: tuple[FieldRule, ...]
    frame_checks: tuple[tuple[str, dict[str, Any]], ...]
    python_checks: tuple[PythonCheck, ...] = ()

    @property
    def unique_fields(self) -> list[str]:
        return [f.name for f in self.fields if f.unique]


def read_contract(model: type[pa.DataFrameModel]) -> Contract:
    schema = model.to_schema()
    fields, python_checks = [], []
    for name, column in schema.columns.items():
        checks = tuple((c.name, dict(c.statistics or {})) for c in column.checks)
        for written in column.checks:
            if written.name in COLUMN_CHECKS:
                continue
            if written.name not in pa.Check.REGISTERED_CUSTOM_CHECKS or written.groupby is not None:
                raise ContractError(
                    f"{model.__name__}.{name}: check {written.name!r} has no Spark evaluation; "
                    f"known: {sorted(COLUMN_CHECKS)}, or a check registered with "
                    "pandera.extensions.register_check_method (vectorized or element_wise)"
                )
            python_checks.append(PythonCheck(
                field=name, name=written.name, statistics=dict(written.statistics or {}),
                dtype=str(column.dtype), pandera_check=written,
            ))
        fields.append(
            FieldRule(
                name=name, json_type=json_type_of(column.dtype), required=column.required,
                nullable=column.nullable, unique=column.unique, checks=checks,
            )
        )
    frame_checks = tuple((c.name, dict(c.statistics or {})) for c in schema.checks)
    for check_name, _ in frame_checks:
        if check_name != "conditional":
            raise ContractError(f"{model.__name__}: frame check {check_name!r} has no Spark evaluation")
    return Contract(name=model.__name__, fields=tuple(fields), frame_checks=frame_checks,
                    python_checks=tuple(python_checks))


def parse_fields(contract: Contract) -> list[tuple[str, str, DataType]]:
    """What the strict parser types, a field: its name, JSON type and Spark type."""
    return [(f.name, f.json_type.name, f.json_type.spark_type) for f in contract.fields]


def field_outputs(contract: Contract) -> list[Column]:
    """The typed fields as written: JSON-typed values, timestamps for `iso_timestamp` fields.
    Reads the columns of `layers.parse`."""
    outputs = []
    for rule in contract.fields:
        value = _t(rule.name)
        if isinstance(rule.output_type, TimestampType):
            value = layers.iso_timestamp(value)  # a quarantined row's unshaped text is not guessed at
        outputs.append(value.alias(rule.name))
    return outputs


def _t(name: str) -> Column:
    return F.col(layers.value_column(name))


_BUILT_CHECKS: dict[tuple[str, int], list[Check]] = {}


def field_checks(contract: Contract) -> list[Check]:
    """Every row-level rule of the contract as a reason column (uniqueness is the dedup step's).
    Reads the columns of `with_fields`.

    Built once a contract and Spark context: each Column is a few Py4J calls, and a contract's
    checks are a thousand of them (about a second on two cores).
    """
    key = (repr(contract), id(SparkContext._active_spark_context))
    if key not in _BUILT_CHECKS:
        _BUILT_CHECKS.clear()  # Columns of a stopped context are of no use
        _BUILT_CHECKS[key] = _build_field_checks(contract)
    return _BUILT_CHECKS[key]


def _build_field_checks(contract: Contract) -> list[Check]:
    checks: list[Check] = []
    for rule in contract.fields:
        status, text = F.col(layers.status_column(rule.name)), F.col(layers.text_column(rule.name))
        value = _t(rule.name)
        checks.append(
            check(
                (status == FieldStatus.MISSING) & F.lit(rule.required), "contract", f"{rule.name}.required",
                f"required field {rule.name} is missing", column=rule.name,
            )
        )
        checks.append(
            check(
                (status == FieldStatus.NULL) & F.lit(not rule.nullable), "contract",
                f"{rule.name}.not_nullable", f"{rule.name} must not be null", column=rule.name,
            )
        )
        checks.append(
            check(
                status >= FieldStatus.WRONG_TYPE, "contract", f"{rule.name}.type({rule.json_type.name})",
                F.concat(F.lit(f"{rule.name} must be a JSON {rule.json_type.name}, got "),
                         layers.found_type(status)),
                column=rule.name, value=text,
            )
        )
        if rule.json_type.name in OUT_OF_RANGE_WORDS:
            checks.append(
                check(
                    status == FieldStatus.OUT_OF_RANGE, "contract", f"{rule.name}.out_of_range",
                    f"{rule.name} {OUT_OF_RANGE_WORDS[rule.json_type.name]}", column=rule.name, value=text,
                )
            )
        for check_name, statistics in rule.checks:
            if check_name not in COLUMN_CHECKS:
                continue  # a Python check: `_python_field_checks`
            passes, message = COLUMN_CHECKS[check_name](value, statistics)
            checks.append(
                check(
                    value.isNotNull() & ~passes, "contract",
                    rule_id(rule.name, check_name, statistics), f"{rule.name} {message}",
                    column=rule.name, value=value,
                )
            )
    checks.extend(_python_field_checks(contract))
    checks.extend(_frame_checks(contract))
    return checks


def _python_field_checks(contract: Contract) -> list[Check]:
    """A Python check fails where its verdict column (`with_python_checks`) is false."""
    return [
        check(~F.col(c.column), "contract", c.rule, f"{c.field} fails the check {c.rule}",
              column=c.field, value=_t(c.field))
        for c in contract.python_checks
    ]


def frame_rule_id(s: dict[str, Any]) -> str:
    """`amount.greater_than(0).when(status in (PAID,SHIPPED,DELIVERED))`"""
    condition = f"{s['if_column']} in ({','.join(map(str, s['if_in']))})"
    return f"{s['then_column']}.{s['then_check']}({_render(s['then_value'])}).when({condition})"


def _frame_checks(contract: Contract) -> list[Check]:
    """Cross-field checks; a comparison with a missing or wrongly typed value fails, as in pandas."""
    typed = {f.name: _t(f.name) for f in contract.fields}
    checks = []
    for _, s in contract.frame_checks:
        applies = F.coalesce(typed[s["if_column"]].isin(*s["if_in"]), F.lit(False))
        holds = F.coalesce(COMPARISONS[s["then_check"]](typed[s["then_column"]], s["then_value"]),
                           F.lit(False))
        condition = f"{s['if_column']} in ({','.join(map(str, s['if_in']))})"
        checks.append(
            check(
                applies & ~holds, "contract", frame_rule_id(s),
                f"{s['then_column']} must be {COMPARISON_WORDS[s['then_check']]} "
                f"{_render(s['then_value'])} when {condition}",
                column=s["then_column"], value=typed[s["then_column"]],
            )
        )
    return checks
