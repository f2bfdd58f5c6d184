"""The pandera front-end: a pandera `DataFrameModel` read into the contract model.

A nested message is written flattened by path (docs/judging.md, "Nested messages"): a field
inside objects is named by its path (`alias="data.customer.email"`, a key holding a dot
quoted: `alias='data["app.name"]'`); an object may be declared (`Series[object]`,
`metadata={"object": True}`); an array is `Series[int]` (its length) with
`metadata={"items": ElementModel}`. Everything pandera lets a model say that Foodtaster
gives no meaning to is refused here, by name, before a batch is landed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pandera.pandas as pa
from pandera.engines import pandas_engine

from foodtaster.contract.checks import COMPARISONS, DECLARED
from foodtaster.contract.model import (
    ARRAY,
    OBJECT,
    SCALAR_ITEM,
    Check,
    Contract,
    ContractError,
    FieldRule,
    JsonType,
    PythonCheck,
    Scope,
)
from foodtaster.contract.path import Path, PathError

# What a field's metadata may say, and what reads it.
METADATA_KEYS = {
    "object": "a declared object",
    "items": "an array's element model",
    "personal": "a value no person may read (masked wherever shown)",
    "references": "a reference to another dataset (foodtaster.contract_references)",
    "retry": "how a failed reference is retried (foodtaster.contract_references)",
}

# pandera options Foodtaster gives no meaning to: (attribute, its default, why).
_SCHEMA_OPTIONS = (
    ("dtype", None, "a dtype for every column"),
    ("coerce", False, "coercion (a JSON value is judged as written, never converted)"),
    ("ordered", False, "column order (a JSON object's keys have none)"),
    ("unique_column_names", False, "unique column names (a JSON object's keys are unique)"),
    ("add_missing_columns", False, "adding missing columns (a missing field is a reason)"),
    ("on_missing_columns", None, "on_missing_columns (a missing field is a reason)"),
    ("drop_invalid_rows", False, "dropping invalid rows (they are quarantined)"),
    ("report_duplicates", "all", "report_duplicates (every copy of a key is judged)"),
    ("index", None, "an index (a message has none)"),
)
_COLUMN_OPTIONS = (
    ("coerce", False, "coercion (a JSON value is judged as written, never converted)"),
    ("regex", False, "regex column names (name each path)"),
    ("default", None, "a default (a missing field is a reason, never filled in)"),
    ("drop_invalid_rows", False, "dropping invalid rows (they are quarantined)"),
    ("on_missing", None, "on_missing (a missing field is a reason)"),
    ("report_duplicates", "all", "report_duplicates (every copy of a key is judged)"),
)
_CHECK_OPTIONS = (
    ("ignore_na", True, "ignore_na=False (a null is the nullable rule's)"),
    ("raise_warning", False, "raise_warning (a failing rule quarantines the message)"),
    ("n_failure_cases", None, "n_failure_cases (every failing message gets its reasons)"),
)


def _refuse_options(where: str, thing: Any, options: tuple[tuple[str, Any, str], ...]) -> None:
    for name, default, words in options:
        value = getattr(thing, name, default)
        if value != default and not (default is None and not value):
            raise ContractError(f"{where}: pandera's {name}={value!r} is not used by Foodtaster: "
                                f"{words}; remove it")


def _schema_of(model: type[pa.DataFrameModel], owner: str) -> pa.DataFrameSchema:
    """pandera's schema of a model; pandera's own refusal of it (a decimal's scale beyond its
    precision, an unknown Config.strict) as a ContractError naming where the model is used."""
    try:
        schema = model.to_schema()
    except (pa.errors.SchemaInitError, ValueError) as err:
        raise ContractError(f"{owner}: pandera refuses {model.__name__}: {err}") from err
    _refuse_options(f"{owner} ({model.__name__})", schema, _SCHEMA_OPTIONS)
    if schema.parsers:
        raise ContractError(f"{owner} ({model.__name__}): pandera parsers are not used by "
                            "Foodtaster (a JSON value is judged as written); remove them")
    config = getattr(model, "Config", None)
    for name in ("from_format", "to_format", "multiindex_name"):
        if getattr(config, name, None) is not None:
            raise ContractError(f"{owner} ({model.__name__}): Config.{name} is not used by Foodtaster "
                                "(messages are JSON lines); remove it")
    return schema


def _strict_of(schema: pa.DataFrameSchema, model: type[pa.DataFrameModel], owner: str) -> bool | str:
    strict = schema.strict
    # by identity: 1 and 0 equal True and False, and would be read as neither (`strict is True`)
    if not (strict is True or strict is False or strict == "filter"):
        raise ContractError(f"{owner}: Config.strict of {model.__name__} is {strict!r}; one of True, "
                            "False, 'filter'")
    return strict


def json_type_of(dtype: Any) -> JsonType:
    if isinstance(dtype, pandas_engine.Decimal):
        return JsonType("decimal", int(dtype.precision), int(dtype.scale))
    if isinstance(dtype, pandas_engine.Date):
        return JsonType("date")
    text = str(dtype).lower()
    if text.startswith(("string", "str", "object")):
        return JsonType("string")
    if text.startswith("bool"):
        return JsonType("boolean")
    if text.startswith(("int", "uint")):
        return JsonType("integer")
    if text.startswith("float"):
        return JsonType("number")
    raise ContractError(f"dtype {dtype} has no JSON type here (use str, int, float, bool, "
                        "pa.Decimal or pa.Date)")


def _json_type_at(dtype: Any, where: str) -> JsonType:
    try:
        return json_type_of(dtype)
    except ContractError as err:
        raise ContractError(f"{where}: {err}") from err


def _column_checks(where: str, column: Any) -> tuple[list[Check], list[Any]]:
    """A column's checks the model knows, and its Python checks (registered by the author)."""
    known, python = [], []
    for written in column.checks:
        _refuse_options(f"{where}: check {written.name!r}", written, _CHECK_OPTIONS)
        if written.name in DECLARED and written.groupby is None:
            known.append(Check(written.name, dict(written.statistics or {})))
        elif written.name in pa.Check.REGISTERED_CUSTOM_CHECKS and written.groupby is None:
            python.append(written)
        else:
            raise ContractError(
                f"{where}: check {written.name!r} has no meaning here; known: {sorted(DECLARED)}, or a "
                "check registered with pandera.extensions.register_check_method (vectorized or "
                "element_wise)"
            )
    return known, python


def _path_of(name: str, where: str) -> Path:
    try:
        path = Path.parse(name)
    except PathError as err:
        raise ContractError(f"{where}: {err}") from err
    if not path:
        raise ContractError(f"{where}: a field needs a path")
    try:
        path.keys  # noqa: B018  a path through objects only
    except PathError as err:
        raise ContractError(f"{where}: a path names no array element; fields of elements belong in "
                            "the element model (metadata={'items': Model})") from err
    return path


def _read_scope(model: type[pa.DataFrameModel], owner: str, *, root: bool) -> tuple[Scope, list[PythonCheck]]:
    """A model's slots, objects implied by the paths inserted before the slots under them."""
    schema = _schema_of(model, owner)
    declared: dict[Path, FieldRule] = {}
    python_checks: list[PythonCheck] = []
    for name, column in schema.columns.items():
        where = f"{owner}.{name}"
        path = _path_of(name, where)
        _refuse_options(where, column, _COLUMN_OPTIONS)
        metadata = column.metadata or {}
        unknown = sorted(set(metadata) - set(METADATA_KEYS))
        if unknown:
            raise ContractError(f"{where}: metadata {unknown} has no meaning here; known: "
                                + ", ".join(f"{k} ({v})" for k, v in METADATA_KEYS.items()))
        checks, python = _column_checks(where, column)
        if metadata.get("object"):
            if checks or python:
                raise ContractError(f"{where}: an object takes no checks; put them on its fields")
            if "items" in metadata:
                raise ContractError(f"{where}: an object (metadata 'object') or an array (metadata "
                                    "'items'), not both")
            json_type, items = OBJECT, None
        elif "items" in metadata:
            json_type, items = ARRAY, _read_items(metadata["items"], where)
            if _json_type_at(column.dtype, where).name != "integer":
                raise ContractError(f"{where}: an array is declared as Series[int] (its length)")
        else:
            json_type, items = _json_type_at(column.dtype, where), None
        if column.unique and (not root or json_type.name in ("object", "array")):
            raise ContractError(f"{where}: only a field of the message itself can be unique")
        for written in python:
            if not root or json_type.name in ("array", "decimal", "date"):
                raise ContractError(f"{where}: the Python check {written.name!r} runs only on a "
                                    "string, number, integer or boolean field of the message itself")
            python_checks.append(PythonCheck(path=path, name=written.name,
                                             statistics=dict(written.statistics or {}),
                                             dtype=str(column.dtype), check=written))
        declared[path] = FieldRule(
            path=path, json_type=json_type, required=column.required, nullable=column.nullable,
            unique=column.unique, checks=tuple(checks), items=items,
            personal=bool(metadata.get("personal", False)),
        )
    return Scope(_with_implied_objects(declared, owner), _strict_of(schema, model, owner)), python_checks


def _with_implied_objects(declared: dict[Path, FieldRule], owner: str) -> tuple[FieldRule, ...]:
    fields: dict[Path, FieldRule] = {}
    for path, rule in declared.items():
        for parent in path.ancestors():
            above = declared.get(parent)
            if above is not None and not above.is_object:
                raise ContractError(f"{owner}.{path}: {parent} is a {above.json_type.name}, not an "
                                    "object, so nothing lies under it")
            if parent not in fields:
                fields[parent] = above or FieldRule(parent, OBJECT, required=False, nullable=True,
                                                    unique=False, checks=(), declared=False)
        fields[path] = rule
    for rule in fields.values():
        if rule.is_object and not any(f.is_under(rule.path) for f in fields):
            raise ContractError(f"{owner}.{rule.path}: an object with no field under it; name "
                                "its fields (or drop it: unknown fields are kept as Config.strict says)")
    return tuple(fields.values())


def _read_items(items: Any, where: str) -> Scope:
    if not (isinstance(items, type) and issubclass(items, pa.DataFrameModel)):
        raise ContractError(f"{where}: metadata 'items' must be a pandera DataFrameModel, got {items!r}")
    scope, _ = _read_scope(items, f"{where}[]", root=False)
    if _schema_of(items, f"{where}[]").checks:
        raise ContractError(f"{where}[]: an element model takes no frame checks")
    if [f.path for f in scope.fields] == [Path.of(SCALAR_ITEM)]:
        (value,) = scope.fields
        if value.is_object or value.is_array:
            raise ContractError(f"{where}[]: an array of arrays or of one-field objects is not supported")
        return Scope(scope.fields, scope.strict, scalar=True)
    return scope


def read_pandera(model: type[pa.DataFrameModel], source: str = "") -> Contract:
    """A pandera model as a contract, or a ContractError naming what it cannot be judged by."""
    owner = model.__name__
    scope, python_checks = _read_scope(model, owner, root=True)
    schema = _schema_of(model, owner)
    frame_checks = []
    for written in schema.checks:
        _refuse_options(f"{owner}: frame check {written.name!r}", written, _CHECK_OPTIONS)
        frame_checks.append(Check(written.name, dict(written.statistics or {})))
    names = {f.name: f for f in scope.fields}
    for check_name, statistics in frame_checks:
        if check_name != "conditional":
            raise ContractError(f"{owner}: frame check {check_name!r} has no meaning here (known: "
                                "conditional)")
        for key in ("if_column", "then_column"):
            found = names.get(statistics[key])
            if found is None or found.is_object or found.is_array:
                raise ContractError(f"{owner}: the conditional's {key} {statistics[key]!r} "
                                    "is no field of the message")
        _refuse_another_conditional(owner, statistics, names)
    return Contract(name=owner, fields=scope.fields, frame_checks=tuple(frame_checks),
                    python_checks=tuple(python_checks), strict=scope.strict,
                    source=source or f"{model.__module__}:{model.__qualname__}",
                    key=_key_of(schema.unique, scope, owner))


def _key_of(unique: Any, scope: Scope, owner: str) -> tuple[Path, ...]:
    """`Config.unique`: a key of several fields, in its order (one field: its `unique=True`)."""
    if not unique:
        return ()
    names = [unique] if isinstance(unique, str) else list(unique)
    fields = {f.name: f for f in scope.fields}
    for name in names:
        found = fields.get(name)
        if found is None or found.is_object or found.is_array:
            raise ContractError(f"{owner}: Config.unique names {name!r}, which is no scalar field of the "
                                "message itself")
    if len(names) == 1:
        raise ContractError(f"{owner}: Config.unique of one field {names[0]!r}: write unique=True on it")
    return tuple(fields[name].path for name in names)


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
    if s["then_check"] not in COMPARISONS or not _is_number(s["then_value"]):
        raise ContractError(f"{owner}: the conditional's then_check {s['then_check']!r} and then_value "
                            f"{s['then_value']!r} are one of {sorted(COMPARISONS)} and a number")
    if not all(_OF_TYPE[if_rule.json_type.name](v) for v in s["if_in"]):
        raise ContractError(f"{owner}: the conditional's if_in {s['if_in']!r} are not all values of "
                            f"{s['if_column']!r}, a {if_rule.json_type.name}")
