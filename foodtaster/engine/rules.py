"""Read a pandera contract for row-level evaluation on Spark.

The rules are written once, in the pandera model. This module reads the model's
schema (paths, dtypes, nullability, checks and their statistics) into the slots
the strict parser types in its one pass (`parser_input`), objects and arrays at
any depth (docs/judging.md, "Nested messages"); `row_checks` turns each rule into
a reason column with the meaning pandera's pandas backend gives it, and
`tests/integration/test_differential*.py` hold the two to the same verdict.

Types are strict JSON types, given by the strict parser (`layers.parse`): a
string is only a JSON string, a number a JSON number, an integer a number
written without a fraction or exponent. A wrong type is a `type` reason; a
missing field is `required`; a JSON null is `not_nullable`; a number its column
cannot hold (an integer beyond 64 bits, a double that overflows or underflows, a
decimal's digits) is `out_of_range`, never a null, an infinity or a rounding.
Value checks run only on values of the right type, as pandera skips nulls in checks.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pandera.pandas as pa
from pandera.engines import pandas_engine
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from foodtaster.checks import COMPARISONS
from foodtaster.engine import layers
from foodtaster.engine.reasons import REASONS, VALUE_MAX_CHARS
from foodtaster.errors import UsageError


class ContractError(UsageError):
    """The contract uses something the Spark evaluator cannot give pandera's meaning to."""


@dataclass(frozen=True)
class JsonType:
    """A slot's type: a JSON type (string, number, integer, boolean), a decimal or a date
    read from one, or a container (object, array)."""

    name: str  # string | number | integer | boolean | decimal | date | object | array
    spark_type: DataType  # the typed value's (an array's: its elements' output, built apart)

    @property
    def word(self) -> str:
        """What the type rule names: `amount.type(number)`; a decimal is a JSON number."""
        return "number" if self.name == "decimal" else self.name

    @property
    def parsed_type(self) -> DataType:
        """What the strict parser returns: a date as its checked text, an object as no value."""
        return StringType() if self.name in ("date", "object") else self.spark_type


OBJECT = JsonType("object", StringType())
ARRAY = JsonType("array", StringType())


def json_type_of(dtype: Any) -> JsonType:
    if isinstance(dtype, pandas_engine.Decimal):
        precision, scale = int(dtype.precision), int(dtype.scale)
        if not 0 <= scale <= precision <= 38 or precision < 1:
            raise ContractError(f"decimal({precision},{scale}) has no Spark type (precision 1..38, "
                                "scale 0..precision)")
        return JsonType("decimal", DecimalType(precision, scale))
    if isinstance(dtype, pandas_engine.Date):
        return JsonType("date", DateType())
    text = str(dtype).lower()
    if text.startswith(("string", "str", "object")):
        return JsonType("string", StringType())
    if text.startswith("bool"):
        return JsonType("boolean", BooleanType())
    if text.startswith(("int", "uint")):
        return JsonType("integer", LongType())
    if text.startswith("float"):
        return JsonType("number", DoubleType())
    raise ContractError(f"dtype {dtype} has no JSON type here (use str, int, float, bool, "
                        "pa.Decimal or pa.Date)")


def render(value: Any) -> str:
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
        args = f"({render(next(iter(scalars.values())))})"
    elif scalars:
        args = "(" + ",".join(f"{k}={render(v)}" for k, v in scalars.items()) + ")"
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


@dataclass(frozen=True)
class FieldRule:
    """One slot of a scope (the message, or an array's element): a value at a path of keys.

    `name` is the path inside its scope, keys joined by dots (`data.customer.email`); an
    array's `items` is the scope of its elements. An object is `declared` when the contract
    names it (`metadata={"object": True}`), else it is implied by the paths under it.
    """

    name: str
    json_type: JsonType
    required: bool
    nullable: bool
    unique: bool
    checks: tuple[tuple[str, dict[str, Any]], ...]
    items: Scope | None = None
    declared: bool = True

    @property
    def is_object(self) -> bool:
        return self.json_type.name == "object"

    @property
    def is_array(self) -> bool:
        return self.json_type.name == "array"

    @property
    def output_type(self) -> DataType:
        """A leaf's written type: its typed value, a timestamp for an `iso_timestamp` string."""
        if any(name == "iso_timestamp" for name, _ in self.checks):
            return TimestampType()
        return self.json_type.spark_type


@dataclass(frozen=True)
class Scope:
    """The slots judged together: the message's, or one array element's. Parents come before
    the slots under them. `strict` is pandera's `Config.strict` of the scope's model (True:
    an unknown field is a reason; False: it is kept; "filter": it is dropped). An element
    scope of `scalar` items has one slot, `value`, the element itself."""

    fields: tuple[FieldRule, ...]
    strict: bool | str = False
    scalar: bool = False

    def declared_objects_above(self, name: str) -> list[FieldRule]:
        """The declared objects a slot lies under, outermost first."""
        by_name = {f.name: f for f in self.fields if f.is_object and f.declared}
        keys = name.split(".")
        return [by_name[p] for p in (".".join(keys[:k]) for k in range(1, len(keys))) if p in by_name]


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
        return f"_py_{layers.column_safe(self.field)}_{self.name}"

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
    strict: bool | str = False

    @property
    def scope(self) -> Scope:
        return Scope(self.fields, self.strict)

    @property
    def unique_fields(self) -> list[str]:
        return [f.name for f in self.fields if f.unique]

    @property
    def keeps_unknown(self) -> bool:
        """The valid rows carry the fields the contract does not name (`Config.strict = False`)."""
        return self.strict is False

    def slot(self, name: str) -> FieldRule:
        for field in self.fields:
            if field.name == name:
                return field
        raise ContractError(f"{self.name} has no field {name!r}; its fields: "
                            + ", ".join(f.name for f in self.fields if not f.is_object))


SCALAR_ITEM = "value"  # the one field of an element model that judges an array of scalars


def _schema_of(model: type[pa.DataFrameModel], owner: str) -> pa.DataFrameSchema:
    """pandera's schema of a model; pandera's own refusal of it (a decimal's scale beyond its
    precision, an unknown Config.strict) as a ContractError naming where the model is used."""
    try:
        return model.to_schema()
    except (pa.errors.SchemaInitError, ValueError) as err:
        raise ContractError(f"{owner}: pandera refuses {model.__name__}: {err}") from err


def _strict_of(schema: pa.DataFrameSchema, model: type[pa.DataFrameModel], owner: str) -> bool | str:
    strict = schema.strict
    # by identity: 1 and 0 equal True and False, and would be read as neither (`strict is True`)
    if not (strict is True or strict is False or strict == "filter"):
        raise ContractError(f"{owner}: Config.strict of {model.__name__} is {strict!r}; one of True, "
                            "False, 'filter'")
    return strict


def _column_checks(owner: str, name: str, column: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    checks = tuple((c.name, dict(c.statistics or {})) for c in column.checks)
    for written in column.checks:
        if written.name in COLUMN_CHECKS:
            continue
        if written.name in pa.Check.REGISTERED_CUSTOM_CHECKS and written.groupby is None:
            continue
        raise ContractError(
            f"{owner}.{name}: check {written.name!r} has no Spark evaluation; "
            f"known: {sorted(COLUMN_CHECKS)}, or a check registered with "
            "pandera.extensions.register_check_method (vectorized or element_wise)"
        )
    return checks


def _read_scope(model: type[pa.DataFrameModel], owner: str, *, root: bool) -> tuple[Scope, list[PythonCheck]]:
    """A model's slots, objects implied by the paths inserted before the slots under them."""
    schema = _schema_of(model, owner)
    declared: dict[str, FieldRule] = {}
    python_checks: list[PythonCheck] = []
    for name, column in schema.columns.items():
        where = f"{owner}.{name}"
        if not name or any(not key for key in name.split(".")):
            raise ContractError(f"{where}: a path has a key on each side of every dot")
        if "[" in name or "]" in name:
            raise ContractError(f"{where}: a path names no array element; fields of elements "
                                "belong in the element model (metadata={{'items': Model}})")
        metadata = column.metadata or {}
        checks = _column_checks(owner, name, column)
        spark_checks = tuple(c for c in checks if c[0] in COLUMN_CHECKS)
        if metadata.get("object"):
            if checks:
                raise ContractError(f"{where}: an object takes no checks; put them on its fields")
            if "items" in metadata:
                raise ContractError(f"{where}: an object (metadata 'object') or an array (metadata "
                                    "'items'), not both")
            json_type = OBJECT
            items = None
        elif "items" in metadata:
            json_type, items = ARRAY, _read_items(metadata["items"], where)
            if _json_type_at(column.dtype, where).name != "integer":
                raise ContractError(f"{where}: an array is declared as Series[int] (its length)")
        else:
            json_type, items = _json_type_at(column.dtype, where), None
        if column.unique and (not root or json_type.name in ("object", "array")):
            raise ContractError(f"{where}: only a field of the message itself can be unique")
        for written in column.checks:
            if written.name in COLUMN_CHECKS:
                continue
            if not root or json_type.name in ("array", "decimal", "date"):
                raise ContractError(f"{where}: the Python check {written.name!r} runs only on a "
                                    "string, number, integer or boolean field of the message itself")
            python_checks.append(PythonCheck(
                field=name, name=written.name, statistics=dict(written.statistics or {}),
                dtype=str(column.dtype), pandera_check=written,
            ))
        declared[name] = FieldRule(
            name=name, json_type=json_type, required=column.required, nullable=column.nullable,
            unique=column.unique, checks=checks if json_type is not ARRAY else spark_checks,
            items=items,
        )
    fields: dict[str, FieldRule] = {}
    for name, rule in declared.items():
        keys = name.split(".")
        for k in range(1, len(keys)):
            parent = ".".join(keys[:k])
            above = declared.get(parent)
            if above is not None and not above.is_object:
                raise ContractError(f"{owner}.{name}: {parent} is a {above.json_type.name}, not an "
                                    "object, so nothing lies under it")
            if parent not in fields:
                fields[parent] = above or FieldRule(parent, OBJECT, required=False, nullable=True,
                                                    unique=False, checks=(), declared=False)
        fields[name] = rule
    _refuse_same_columns(list(fields), owner)
    for rule in fields.values():
        if rule.is_object and not any(f.startswith(rule.name + ".") for f in fields):
            raise ContractError(f"{owner}.{rule.name}: an object with no field under it; name "
                                "its fields (or drop it: unknown fields are kept as Config.strict says)")
    return Scope(tuple(fields.values()), _strict_of(schema, model, owner)), python_checks


def _json_type_at(dtype: Any, where: str) -> JsonType:
    try:
        return json_type_of(dtype)
    except ContractError as err:
        raise ContractError(f"{where}: {err}") from err


def _read_items(items: Any, where: str) -> Scope:
    if not (isinstance(items, type) and issubclass(items, pa.DataFrameModel)):
        raise ContractError(f"{where}: metadata 'items' must be a pandera DataFrameModel, got {items!r}")
    scope, _ = _read_scope(items, f"{where}[]", root=False)
    if _schema_of(items, f"{where}[]").checks:
        raise ContractError(f"{where}[]: an element model takes no frame checks")
    names = [f.name for f in scope.fields]
    if names == [SCALAR_ITEM]:
        (value,) = scope.fields
        if value.is_object or value.is_array:
            raise ContractError(f"{where}[]: an array of arrays or of one-field objects is not supported")
        return Scope(scope.fields, scope.strict, scalar=True)
    return scope


def _refuse_same_columns(names: list[str], owner: str) -> None:
    """Two paths whose Spark columns would be one (`a.b` and `a__b`): refused by name."""
    seen: dict[str, str] = {}
    for name in names:
        safe = layers.column_safe(name)
        if safe in seen:
            raise ContractError(f"{owner}: {seen[safe]!r} and {name!r} would be one column; rename one")
        seen[safe] = name


def read_contract(model: type[pa.DataFrameModel]) -> Contract:
    scope, python_checks = _read_scope(model, model.__name__, root=True)
    schema = _schema_of(model, model.__name__)
    frame_checks = tuple((c.name, dict(c.statistics or {})) for c in schema.checks)
    names = {f.name: f for f in scope.fields}
    for check_name, statistics in frame_checks:
        if check_name != "conditional":
            raise ContractError(f"{model.__name__}: frame check {check_name!r} has no Spark evaluation")
        for key in ("if_column", "then_column"):
            found = names.get(statistics[key])
            if found is None or found.is_object or found.is_array:
                raise ContractError(f"{model.__name__}: the conditional's {key} {statistics[key]!r} "
                                    "is no field of the message")
        _refuse_another_conditional(model.__name__, statistics, names)
    return Contract(name=model.__name__, fields=scope.fields, frame_checks=frame_checks,
                    python_checks=tuple(python_checks), strict=scope.strict)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# Whether a conditional's `if_in` value is of its if_column's type: pandas compares values as
# they are, where Spark would cast one side (a string "1" equals 1, "2026-01-01" a date, and
# a decimal 0.10 the double 0.1, which Python's Decimal does not).
_OF_TYPE: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_number, "number": _is_number,
    "decimal": lambda v: isinstance(v, Decimal) or isinstance(v, int) and not isinstance(v, bool),
    "date": lambda v: isinstance(v, date) and not isinstance(v, datetime),
}


def _refuse_another_conditional(owner: str, s: dict[str, Any], names: dict[str, FieldRule]) -> None:
    """A conditional whose meaning in pandas (`foodtaster.checks.conditional`) Spark would not
    give: it holds only where then_column's value is an int or a float, compared by a
    comparison with a number, and tests if_column's values as they are."""
    then_rule, if_rule = names[s["then_column"]], names[s["if_column"]]
    if then_rule.json_type.name not in ("number", "integer"):
        raise ContractError(f"{owner}: the conditional's then_column {s['then_column']!r} is a "
                            f"{then_rule.json_type.name}; it compares a number or integer field")
    if s["then_check"] not in COMPARISON_WORDS or not _is_number(s["then_value"]):
        raise ContractError(f"{owner}: the conditional's then_check {s['then_check']!r} and then_value "
                            f"{s['then_value']!r} are one of {sorted(COMPARISON_WORDS)} and a number")
    if not all(_OF_TYPE[if_rule.json_type.name](v) for v in s["if_in"]):
        raise ContractError(f"{owner}: the conditional's if_in {s['if_in']!r} are not all values of "
                            f"{s['if_column']!r}, a {if_rule.json_type.name}")


def frame_rule_id(s: dict[str, Any]) -> str:
    """`amount.greater_than(0).when(status in (PAID,SHIPPED,DELIVERED))`"""
    condition = f"{s['if_column']} in ({','.join(map(str, s['if_in']))})"
    return f"{s['then_column']}.{s['then_check']}({render(s['then_value'])}).when({condition})"


# ---- what the strict parser is asked for ---------------------------------------------------


def _slot_spec(rule: FieldRule, *, path: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": rule.json_type.name}
    if path:
        spec["path"] = rule.name.split(".")
    if isinstance(rule.json_type.spark_type, DecimalType):
        spec["precision"] = rule.json_type.spark_type.precision
        spec["scale"] = rule.json_type.spark_type.scale
    if rule.items is not None:
        spec["items"] = _items_spec(rule.items)
    return spec


def _items_spec(scope: Scope) -> dict[str, Any]:
    if scope.scalar:
        return _slot_spec(scope.fields[0], path=False)
    return {"type": "object", "strict": scope.strict, "fields": [_slot_spec(f) for f in scope.fields]}


def _element_type(scope: Scope) -> StructType:
    own = [StructField("_status", IntegerType(), True), StructField("_text", StringType(), True)]
    if scope.scalar:
        return StructType([*own, StructField("_value", _parsed_type(scope.fields[0]), True)])
    return StructType(own + _slot_fields(scope.fields))


def _parsed_type(rule: FieldRule) -> DataType:
    if rule.items is not None:
        return ArrayType(_element_type(rule.items), True)
    return rule.json_type.parsed_type


def _slot_fields(fields: tuple[FieldRule, ...]) -> list[StructField]:
    out = []
    for rule in fields:
        out += [StructField(rule.name, _parsed_type(rule), True),
                StructField(f"{rule.name}__status", IntegerType(), True),
                StructField(f"{rule.name}__text", StringType(), True)]
    return out


def parser_input(contract: Contract, max_message_bytes: int) -> layers.ParserInput:
    """What `layers.parse` hands the strict parser for this contract, and the shape it returns."""
    spec = {"max_bytes": max_message_bytes, "value_chars": VALUE_MAX_CHARS, "strict": contract.strict,
            "fields": [_slot_spec(f) for f in contract.fields]}
    returns = StructType([StructField("reasons", REASONS, True), *_slot_fields(contract.fields),
                          StructField(layers.UNEXPECTED, ArrayType(StringType(), True), True),
                          StructField(layers.UNKNOWN, layers.UNKNOWN_TYPE, True)])
    return layers.ParserInput(json.dumps(spec, separators=(",", ":")), returns,
                              tuple(f.name for f in contract.fields))
