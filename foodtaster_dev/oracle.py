"""The oracle: the verdict of pandera's own pandas backend, one message at a time.

Used by the differential test (Spark's verdict must equal this, rule by rule)
and by the benchmark's naive approach. A message becomes a one-row pandas frame
whose columns carry the model's dtype when the JSON value has the field's JSON
type, and stay `object` when it does not, so pandera's dtype check is the type
rule. Rule ids are translated into the engine's (`foodtaster.engine.rules.rule_id`).

A number its typed column cannot hold (an integer beyond 64 bits for an integer
field; for a number field, one that overflows a double or underflows to zero) is
`<field>.out_of_range` here as in the engine: pandas would hold it as an object
column (pandera: a dtype failure) or, for an underflow, silently as 0.0, so the
oracle reads lines with `decode`, which keeps such literals apart.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pandera.pandas as pa

from foodtaster.engine.rules import Contract, frame_rule_id, json_type_of, rule_id

INT64 = (-(2**63), 2**63 - 1)


class Unrepresentable:
    """A JSON number with a fraction or an exponent that no double holds: it overflows to
    infinity, or a nonzero literal underflows to zero. Kept as its text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _number(text: str) -> float | Unrepresentable:
    value = float(text)
    mantissa = text.lower().split("e")[0]
    if math.isinf(value) or value == 0 and any(c in "123456789" for c in mantissa):
        return Unrepresentable(text)
    return value


def decode(line: bytes | str) -> Any:
    """A line as JSON, numbers no double holds kept apart (`Unrepresentable`)."""
    return json.loads(line, parse_float=_number)


def out_of_range(json_type: str, value: Any) -> bool:
    """A number of the field's JSON type that its typed column (int64, double) cannot hold."""
    if isinstance(value, bool):
        return False
    if json_type == "integer":
        return isinstance(value, int) and not INT64[0] <= value <= INT64[1]
    if json_type == "number":
        if isinstance(value, Unrepresentable):
            return True
        if isinstance(value, int):
            try:
                return math.isinf(float(value))
            except OverflowError:
                return True
    return False


def json_type_matches(json_type: str, value: Any) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if json_type == "integer":
        return isinstance(value, int)
    return isinstance(value, int | float)


class Mistyped:
    """A value of the wrong JSON type, hashable whatever it holds, so pandera reports it as
    a dtype failure (an `object` column) rather than tripping over an unhashable list or dict."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def message_frame(message: dict[str, Any], schema: pa.DataFrameSchema) -> pd.DataFrame:
    columns = {}
    for name, column in schema.columns.items():
        if name not in message:
            continue
        value = message[name]
        json_type = json_type_of(column.dtype).name
        if value is None:
            columns[name] = pd.Series([None], dtype="float64" if json_type != "string" else "string[pyarrow]")
        elif not out_of_range(json_type, value) and json_type_matches(json_type, value):
            columns[name] = pd.Series([value]).astype(str(column.dtype))
        else:
            columns[name] = pd.Series([Mistyped(value)], dtype="object")
    return pd.DataFrame(columns, index=[0])


def failed_rules(message: dict[str, Any], model: type[pa.DataFrameModel], contract: Contract) -> set[str]:
    """The engine's rule ids of every rule pandera fails on this one message (uniqueness aside)."""
    schema = model.to_schema()
    try:
        schema.validate(message_frame(message, schema), lazy=True)
        return set()
    except pa.errors.SchemaErrors as errors:
        cases = errors.failure_cases
    fields = {f.name: f for f in contract.fields}
    failed: set[str] = set()
    mistyped = set()
    for case in cases.itertuples():
        check = str(case.check)
        if check.startswith("dtype(") and message.get(case.column) is not None:
            mistyped.add(case.column)
            json_type = fields[case.column].json_type.name
            beyond = out_of_range(json_type, message[case.column])
            failed.add(f"{case.column}.out_of_range" if beyond else f"{case.column}.type({json_type})")
    for case in cases.itertuples():
        check, column = str(case.check), case.column
        if check == "column_in_dataframe":
            failed.add(f"{case.failure_case}.required")
        elif check == "not_nullable":
            failed.add(f"{column}.not_nullable")
        elif check.startswith(("dtype(", "field_uniqueness")):
            continue
        elif case.schema_context == "DataFrameSchema" and column is None or check.startswith("conditional"):
            for name, statistics in contract.frame_checks:
                if check.startswith(name):
                    failed.add(frame_rule_id(statistics))
        elif column not in mistyped and column in fields:
            for name, statistics in fields[column].checks:
                if check.startswith(name):
                    failed.add(rule_id(column, name, statistics))
    return failed

