"""A JSON Schema contract judged on Spark: each message by the compiled validator, in Arrow batches.

The strict parser has already given the bytes and parse layers their verdict and typed the
schema's typed view (`layers.parse`); a line that is one JSON object is then read again by
Python's `json` and judged by `jsonschema_rs` (the draft the schema names). A message that
passes costs one `is_valid`; only a failing one is walked for its errors. Each error is a
reason in the one shape (`reasons.REASONS`): `rule` the keyword at the failing value's path
pattern with its limit (`data.lines[].qty.minimum(1)`, `data.ts.oneOf`), `column` the exact
path (`data.lines[2].qty`), a missing property's or an unexpected one's own path
(`data.customer.email.required`, `data.meta["x.y"].additionalProperties`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from foodtaster.contract.json_schema import JsonSchemaDoc
from foodtaster.contract.model import Contract, render
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers
from foodtaster.engine.judging.reasons import REASONS, VALUE_MAX_CHARS, Check

SCHEMA_REASONS = "_schema_reasons"

# The argument a keyword's rule is named with: the kind's attribute holding it.
_ARGUMENTS = {"limit", "multiple_of", "format"}

_VALIDATORS: dict[str, Any] = {}  # one compiled validator a schema, a Python worker


def with_schema_reasons(rows: DataFrame, contract: Contract) -> DataFrame:
    """Add `SCHEMA_REASONS` to rows from `layers.parse`: the schema's reasons of a message, null
    where it passes or where the line is no JSON object (its parse reasons say why)."""
    judge = F.udf(_judge_function(contract.schema), REASONS, useArrow=True)
    # the UDF is given no bytes of a line that failed (Spark runs a Python UDF before a CASE's test)
    return rows.withColumn(SCHEMA_REASONS, judge(F.when(~layers.line_failed(), F.col("_raw"))))


def schema_check(reasons: Column | None = None) -> Check:
    """The schema's verdict as one check: failed where the message has a reason."""
    found = F.col(SCHEMA_REASONS) if reasons is None else reasons
    failed = F.coalesce(F.size(found) > 0, F.lit(False))
    return Check(failed, F.coalesce(found, F.array().cast(REASONS)))


def _judge_function(doc: JsonSchemaDoc) -> Any:
    key = f"{doc.file}:{hash(json.dumps(doc.document, sort_keys=True))}:{doc.assert_formats}"

    def judge(raw: bytes | None) -> list[tuple[Any, ...]] | None:
        if raw is None:
            return None
        validator = _VALIDATORS.get(key)
        if validator is None:
            validator = _VALIDATORS[key] = doc.validator()
        return judge_message(validator, raw, doc.document)

    return judge


def judge_message(validator: Any, raw: bytes | str, document: Any = None) -> list[tuple[Any, ...]] | None:
    """One message's reasons (layer, rule, column, message, value), or None when it passes.
    `document`: the schema, where a rule's argument is read as written (a type list's order)."""
    overflowed: list[str] = []
    message = json.loads(raw, parse_float=lambda text: _number(text, overflowed))
    if not overflowed:
        if validator.is_valid(message):
            return None
        return [reason for error in validator.iter_errors(message) for reason in reasons_of(error, document)]
    # a number no double holds reads as infinity, which the validator would misjudge: its own
    # reason, and the validator's verdict on every other place
    found = list(_beyond_double(message, Path()))
    beyond = {reason[2] for reason in found}
    return found + [reason for error in validator.iter_errors(message)
                    for reason in reasons_of(error, document) if reason[2] not in beyond]


def _number(text: str, overflowed: list[str]) -> float:
    value = float(text)
    if math.isinf(value):
        overflowed.append(text)
    return value


def _beyond_double(value: Any, at: Path) -> Iterator[tuple[Any, ...]]:
    """A number no double holds (it overflows): judged as no number at all would be wrong, so it
    is its own reason, `out_of_range`, whatever the schema says of that place."""
    if isinstance(value, float) and math.isinf(value):
        yield _reason(at, "out_of_range", "is a number no double holds: beyond ±1.8e308", None, own=True)
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _beyond_double(inner, at.key(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _beyond_double(inner, at.index(index))


def reasons_of(error: Any, document: Any = None) -> Iterator[tuple[Any, ...]]:
    """The reasons of one `jsonschema_rs.ValidationError`: an unexpected property's rule at its
    object's pattern, the column its own path; a missing one's at its own path."""
    kind = error.kind
    name = kind.name
    at = Path(tuple(error.instance_path))
    details = kind.as_dict()
    if name == "required":
        yield _reason(at.key(details["property"]), "required", "is missing: the schema requires it", None,
                      own=True)
        return
    if name in ("additionalProperties", "unevaluatedProperties") and details.get("unexpected"):
        for key in details["unexpected"]:
            value = error.instance.get(key) if isinstance(error.instance, dict) else None
            yield _reason(at.key(key), name, f"is not allowed by {name} of {at or 'the message'}", value,
                          own=True, pattern=at.pattern)
        return
    if name == "type":
        written = _keyword_value(document, error.schema_path)
        types = written if isinstance(written, list) else [written] if isinstance(written, str) \
            else details["types"]
        name = f"type({','.join(types)})"
    else:
        argument = next((details[a] for a in _ARGUMENTS if a in details), None)
        if argument is not None:
            name = f"{name}({render(argument)})"
    yield _reason(at, name, error.message, error.instance)


def _keyword_value(document: Any, schema_path: list[Any]) -> Any:
    """The keyword's value as the schema writes it, or None where the path leaves the document."""
    value = document
    for step in schema_path:
        inside_list = isinstance(value, list) and isinstance(step, int) and step < len(value)
        if isinstance(value, dict) and step in value or inside_list:
            value = value[step]
        else:
            return None
    return value


def _reason(at: Path, rule: str, words: str, value: Any, *, own: bool = False,
            pattern: Path | None = None) -> tuple[Any, ...]:
    """A reason; `words` are the validator's sentence (after the path and a colon) or, `own`,
    the rest of a sentence about the path. The rule is named at `pattern`, else at the path's."""
    where = str(at)
    named = str(at.pattern if pattern is None else pattern)
    message = (f"{where} {words}" if own else f"{where}: {words}") if where else words
    return ("contract", f"{named}.{rule}" if named else rule, where or None, message,
            None if value is None else _text(value))


def _text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= VALUE_MAX_CHARS else text[: VALUE_MAX_CHARS - 1] + "…"
