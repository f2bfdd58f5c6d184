"""The oracle: the verdict of pandera's own pandas backend, one message at a time.

Used by the differential test (Spark's verdict must equal this, rule by rule)
and by the benchmark's naive approach. A message becomes a one-row pandas frame
whose columns carry the model's dtype when the JSON value has the field's JSON
type, and stay `object` when it does not, so pandera's dtype check is the type
rule. Rule ids are the contract model's (`foodtaster.contract.model.rule_id`). Imports no
Spark: the oracle judges by the contract model alone, as the Spark back-end does.

A number its typed column cannot hold (an integer beyond 64 bits for an integer
field; for a number field, one that overflows a double or underflows to zero) is
`<field>.out_of_range` here as in the engine: pandas would hold it as an object
column (pandera: a dtype failure) or, for an underflow, silently as 0.0, so the
oracle reads lines with `decode`, which keeps such literals apart.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date
from decimal import Context, Decimal
from typing import Any

import pandas as pd
import pandera.pandas as pa

from foodtaster.contract.model import (
    SCALAR_ITEM,
    Contract,
    FieldRule,
    PythonCheck,
    Scope,
    frame_rule_id,
    rule_id,
)
from foodtaster.contract.path import Path

INT64 = (-(2**63), 2**63 - 1)


class Unrepresentable:
    """A JSON number with a fraction or an exponent that no double holds: it overflows to
    infinity, or a nonzero literal underflows to zero. Kept as its text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class JsonFloat(float):
    """A JSON number with a fraction or an exponent, its literal kept (a decimal reads that)."""

    text: str

    def __new__(cls, text: str) -> JsonFloat:
        number = super().__new__(cls, text)
        number.text = text
        return number


DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
JSON_NUMBER = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?")


def _number(text: str) -> float | Unrepresentable:
    value = JsonFloat(text)
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


def decimal_fits(value: Any, precision: int, scale: int) -> Decimal | None:
    """The exact decimal of a JSON number where decimal(precision, scale) holds it unrounded:
    at most `scale` digits after the point and `precision - scale` before it (Spark's decimal;
    pandera's own dtype check counts the two apart, so this is judged here, as int64 is).

    The digits are counted on the literal: Python's Decimal would round past 28 digits and
    refuses an exponent beyond about 10**18, which JSON allows (`0e99999999999999999999` is 0)."""
    text = value.text if isinstance(value, JsonFloat | Unrepresentable) else repr(value)
    sign, whole, fraction, exponent = JSON_NUMBER.fullmatch(text).groups()  # type: ignore[union-attr]
    digits = (whole + (fraction or "")).lstrip("0")
    if not digits:
        return Decimal(0).quantize(Decimal(1).scaleb(-scale))
    shift = int(exponent or 0) - len(fraction or "")  # the number is int(digits) * 10**shift
    significant = digits.rstrip("0")
    shift += len(digits) - len(significant)
    after = max(0, -shift)
    before = max(0, len(significant) + shift)
    if after > scale or before > precision - scale:
        return None
    # it fits: `precision` digits hold it (the default context's 28 may not)
    return Decimal(f"{sign}{significant}E{shift}").quantize(Decimal(1).scaleb(-scale),
                                                           context=Context(prec=precision))


def calendar_date(value: Any) -> date | None:
    if not isinstance(value, str) or not DATE.fullmatch(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _cell(rule: FieldRule, value: Any, dtype: Any) -> tuple[pd.Series, str | None]:
    """A one-row column for a present value, and the rule it breaks before pandera looks
    (out of range, or a type pandera's dtypes cannot tell: a date's string, an array)."""
    kind = rule.json_type.name
    if value is None:
        return pd.Series([None], dtype="float64" if kind != "string" else "string[pyarrow]"), None
    if rule.is_object:
        broken = None if isinstance(value, dict) else f"type({rule.json_type.word})"
        return pd.Series([Mistyped(value)], dtype="object"), broken
    if rule.is_array:
        if not isinstance(value, list):
            return pd.Series([Mistyped(value)], dtype="object"), "type(array)"
        return pd.Series([len(value)], dtype="int64"), None
    if kind == "decimal":
        if not (json_type_matches("number", value) or isinstance(value, Unrepresentable)):
            return pd.Series([Mistyped(value)], dtype="object"), "type(number)"
        precision, scale = rule.json_type.precision, rule.json_type.scale
        assert precision is not None and scale is not None
        fits = decimal_fits(value, precision, scale)
        if fits is None:
            return pd.Series([Mistyped(value)], dtype="object"), "out_of_range"
        return pd.Series([fits], dtype="object"), None
    if kind == "date":
        day = calendar_date(value)
        if day is None:
            return pd.Series([Mistyped(value)], dtype="object"), "type(date)"
        return pd.Series([day], dtype="object"), None
    if out_of_range(kind, value):
        return pd.Series([Mistyped(value)], dtype="object"), "out_of_range"
    if not json_type_matches(kind, value):
        return pd.Series([Mistyped(value)], dtype="object"), f"type({kind})"
    return pd.Series([float(value) if kind == "number" else value]).astype(str(dtype)), None


_ABSENT = object()


def _walk(message: Any, path: Path) -> tuple[Any, Path | None]:
    """The value at a path, or `_ABSENT`; and the first object on the way that is no object."""
    value = message
    keys = path.keys
    for k, key in enumerate(keys):
        if value is None:
            return None, None
        if not isinstance(value, dict):
            return _ABSENT, Path(keys[:k])
        if key not in value:
            return _ABSENT, None
        value = value[key]
    return value, None


def _unknown_paths(message: dict[str, Any], scope: Scope) -> list[Path]:
    """The keys a scope does not name: at its level and inside the objects it names."""
    objects = {f.path for f in scope.fields if f.is_object}
    names = {f.path for f in scope.fields}
    found = []

    def visit(value: dict[str, Any], prefix: Path) -> None:
        for key, inner in value.items():
            path = prefix.key(key)
            if path not in names:
                found.append(path)
            elif path in objects and isinstance(inner, dict):
                visit(inner, path)

    visit(message, Path())
    return found


def _join(prefix: str, path: Path) -> str:
    """A printed path, then a relative one: `data.lines[2]` and `qty` -> `data.lines[2].qty`."""
    if not prefix:
        return str(path)
    return prefix + str(Path.of("_") / path)[1:] if path else prefix


Reasons = set[tuple[str, str]]


def judge(message: Any, model: type[pa.DataFrameModel], scope: Scope, *, pattern: str = "",
          where: str = "", frame_checks: tuple = (), python_checks: tuple[PythonCheck, ...] = ()) -> Reasons:
    """pandera's verdict on one message (or one element), as the engine's (rule, column) pairs.

    The normalized view: the scope's fields flattened by path into a one-row frame (an array
    as its length, an object as a marker), judged by the model itself; each element of an
    array of objects is a one-row frame of its own model, keyed by its index. What pandera's
    dtypes cannot tell (a decimal's fit, a date's string, an object or array's JSON type) is
    told here, as int64's range is.
    """
    def rule_of(name: Path) -> str:  # an array of scalars' one field is the element itself
        return _join(pattern, Path() if scope.scalar else name)

    def column_of(name: Path) -> str:
        return _join(where, Path() if scope.scalar else name)

    if scope.scalar:
        message = {SCALAR_ITEM: message}
    schema = model.to_schema()
    # pandera's columns by the contract's paths (a path may be written with a quote it does not need)
    written = {Path.parse(name): name for name in schema.columns}
    fields = {written[f.path]: f for f in scope.fields if f.path in written}
    failed: Reasons = set()
    columns: dict[str, pd.Series] = {}
    skipped: set[str] = set()
    for rule in scope.fields:
        value, not_object = _walk(message, rule.path)
        above = scope.declared_objects_above(rule.path)
        if not_object is not None or any(_walk(message, o.path)[0] in (None, _ABSENT) for o in above):
            skipped.add(written.get(rule.path, rule.name))
            continue
        if not rule.declared:
            if value is not None and value is not _ABSENT and not isinstance(value, dict):
                failed.add((rule_of(rule.path) + ".type(object)", column_of(rule.path)))
            continue
        if value is _ABSENT:
            continue
        column_name = written[rule.path]
        cell, broken = _cell(rule, value, schema.columns[column_name].dtype)
        columns[column_name] = cell
        if broken is not None:
            failed.add((f"{rule_of(rule.path)}.{broken}", column_of(rule.path)))
            skipped.add(column_name)
            continue
        if rule.items is not None and isinstance(value, list):
            items_model = schema.columns[column_name].metadata["items"]
            for i, element in enumerate(value):
                failed |= _judge_element(element, items_model, rule.items, rule_of(rule.path) + "[]",
                                         f"{column_of(rule.path)}[{i}]")
    if scope.strict is True:
        for path in _unknown_paths(message, scope):
            failed.add((str(Path.parse(rule_of(path)).pattern) + ".unexpected", column_of(path)))
    frame = pd.DataFrame(columns, index=[0])
    try:
        schema.validate(frame, lazy=True)
        return failed
    except pa.errors.SchemaErrors as errors:
        cases = errors.failure_cases
    for case in cases.itertuples():
        check, column = str(case.check), case.column
        if column in skipped or check.startswith(("dtype(", "field_uniqueness", "column_in_schema")):
            continue
        if check == "column_in_dataframe":
            name = str(case.failure_case)
            if name not in skipped:
                failed.add((f"{rule_of(fields[name].path)}.required", column_of(fields[name].path)))
        elif check == "not_nullable":
            failed.add((f"{rule_of(fields[column].path)}.not_nullable", column_of(fields[column].path)))
        elif case.schema_context == "DataFrameSchema" and column is None or check.startswith("conditional"):
            for name, statistics in frame_checks:
                if check.startswith(name):
                    failed.add((frame_rule_id(statistics), statistics["then_column"]))
        elif column in fields:
            path = fields[column].path
            for name, statistics in fields[column].checks:
                if check.startswith(name):
                    failed.add((rule_id(rule_of(path), name, statistics), column_of(path)))
            for python_check in python_checks:
                if python_check.path == path and check.startswith(python_check.name):
                    failed.add((python_check.rule, column_of(path)))
    return failed


def _judge_element(element: Any, model: type[pa.DataFrameModel], scope: Scope, pattern: str,
                   where: str) -> Reasons:
    if scope.scalar:
        return judge(element, model, scope, pattern=pattern, where=where)
    if element is None:
        return {(f"{pattern}.not_nullable", where)}
    if not isinstance(element, dict):
        return {(f"{pattern}.type(object)", where)}
    return judge(element, model, scope, pattern=pattern, where=where)


def failed_reasons(message: Any, model: type[pa.DataFrameModel], contract: Contract) -> Reasons:
    """The engine's (rule, column) of every rule pandera fails on this one message (uniqueness aside)."""
    return judge(message, model, contract.scope, frame_checks=contract.frame_checks,
                 python_checks=contract.python_checks)


def failed_rules(message: dict[str, Any], model: type[pa.DataFrameModel], contract: Contract) -> set[str]:
    """The engine's rule ids of every rule pandera fails on this one message (uniqueness aside)."""
    return {rule for rule, _ in failed_reasons(message, model, contract)}
