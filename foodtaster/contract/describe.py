"""The effective contract as rows a person reads: one row a slot, at every depth.

`describe(contract)` gives the rows `foodtaster contract show` prints, whichever front-end
read the contract: a pandera model's slots from the model itself (`Contract.walk`), a JSON
Schema's from the schema it keeps (`schema_rows`, the same `ContractRow`).
No Spark, no pandera: only the contract model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from foodtaster.contract.json_schema import JsonSchemaDoc, follow, typed_kind
from foodtaster.contract.model import Check, Contract, FieldRule, render, rule_id
from foodtaster.contract.path import Path

VALUES_SHOWN = 6  # an isin's allowed values shown before "…"


@dataclass(frozen=True)
class ContractRow:
    """One slot of the contract: its full pattern (`data.lines[].qty`) and what it must be."""

    path: str
    type: str  # `string`, `integer`, `decimal(12,2)`, `object`, `array`, `timestamp`, ...
    required: bool
    nullable: bool
    checks: tuple[str, ...]  # rule-id words: `greater_than_or_equal_to(1)`, `isin(US,DE)`
    key: bool  # part of the message's unique key
    personal: bool  # masked wherever a person reads it


def describe(contract: Contract) -> list[ContractRow]:
    """The contract's rows, parents before the slots under them."""
    keyed = set(contract.message_key)
    if contract.schema is not None:  # a JSON Schema contract: its own reading, the same rows
        key_paths = {str(p) for p in keyed}
        return [replace(r, key=True) if r.path in key_paths else r for r in schema_rows(contract.schema)]
    python: dict[Path, list[str]] = {}
    for check in contract.python_checks:
        python.setdefault(check.path, []).append(f"{check.rule.removeprefix(str(check.path) + '.')} (python)")
    return [_row(where, rule, tuple(python.get(where, ())), where in keyed)
            for where, rule in contract.walk()]


def _row(where: Path, rule: FieldRule, python: tuple[str, ...], key: bool) -> ContractRow:
    checks = [check_words(c) for c in rule.checks if c.name != "iso_timestamp"]
    if rule.items is not None and rule.items.strict is not False:
        checks.append("items.strict" if rule.items.strict is True else "items.filter")
    return ContractRow(
        path=str(where), type=type_words(rule), required=rule.required, nullable=rule.nullable,
        checks=(*checks, *python), key=key, personal=rule.personal,
    )


def type_words(rule: FieldRule) -> str:
    """The slot's type as a person reads it: a decimal with its size, an implied object said so,
    a string read as an instant `timestamp`."""
    t = rule.json_type
    if t.name == "decimal":
        return f"decimal({t.precision},{t.scale})"
    if rule.is_object and not rule.declared:
        return "object (implied)"
    if rule.is_timestamp:
        return "timestamp"
    return t.name


def check_words(check: Check) -> str:
    """A check as its rule id names it, with what the id leaves out (a pattern, a list of
    values) in its parentheses: `greater_than_or_equal_to(1)`, `str_matches(^c-[0-9]{5}$)`,
    `isin(US,DE,FR)`."""
    words = rule_id(None, check.name, check.statistics)
    pattern = check.statistics.get("pattern")
    if pattern is not None:
        return f"{words}({getattr(pattern, 'pattern', pattern)})"
    listed = [v for v in check.statistics.values() if isinstance(v, list | tuple | set | frozenset)]
    if listed and "(" not in words:
        values = list(listed[0])
        if isinstance(listed[0], set | frozenset):
            values = sorted(values, key=str)
        shown = ",".join(render(v) for v in values[:VALUES_SHOWN])
        return f"{words}({shown}{',…' if len(values) > VALUES_SHOWN else ''})"
    return words


def strict_words(strict: bool | str) -> str:
    """What an unknown field is, as `Config.strict` says."""
    if strict is True:
        return "a reason (strict)"
    return "dropped (filter)" if strict == "filter" else "kept in _unknown"


# Keywords that assert something of the value where they stand, in the order shown.
_SHOWN = ("const", "enum", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
          "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "contains",
          "minProperties", "maxProperties", "additionalProperties", "patternProperties", "propertyNames",
          "dependentRequired", "dependentSchemas", "dependencies", "allOf", "anyOf", "oneOf", "not", "if",
          "prefixItems", "unevaluatedProperties", "unevaluatedItems")
_WITH_VALUE = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "minLength",
               "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "pattern")


def schema_rows(doc: JsonSchemaDoc) -> list[ContractRow]:
    """A JSON Schema contract's rows: one a place of its typed view, with the keywords the schema
    asserts there (`minimum(1)`, `oneOf`), and what the dataset asked not to judge."""
    found: list[ContractRow] = []
    _object_rows(doc, doc.document, Path(), found)
    if doc.ignored:
        found.append(ContractRow(path="(not judged)", type="", required=False, nullable=False,
                                 checks=doc.ignored, key=False, personal=False))
    return found


def _object_rows(doc: JsonSchemaDoc, schema: Any, at: Path, found: list[ContractRow],
                 chain: frozenset[str] = frozenset()) -> None:
    schema, chain, _ = follow(schema, doc.document, chain)
    if not isinstance(schema, dict):
        return
    required = set(schema.get("required", ()))
    for key, inner in schema.get("properties", {}).items():
        inner, inner_chain, recursive = follow(inner, doc.document, chain)
        path = at.key(key)
        kind, nullable = typed_kind(inner) if not recursive else (None, True)
        found.append(ContractRow(path=str(path), type="any (JSON text: recursive)" if recursive else
                                 _type_words(inner, kind), required=key in required,
                                 nullable=nullable, checks=tuple(_checks(doc, inner)), key=False,
                                 personal=bool(isinstance(inner, dict) and inner.get("x-personal"))))
        if kind == "object":
            _object_rows(doc, inner, path, found, inner_chain)
        elif kind == "array" and isinstance(inner.get("items"), dict):
            items, items_chain, again = follow(inner["items"], doc.document, inner_chain)
            if not again and typed_kind(items)[0] == "object":
                _object_rows(doc, items, path.each(), found, items_chain)


def _type_words(schema: Any, kind: str | None) -> str:
    if schema is False:
        return "never"
    if kind is not None:
        return kind
    written = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(written, list):
        return " or ".join(written)
    return "any (JSON text)"


def _checks(doc: JsonSchemaDoc, schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    words = []
    for keyword in _SHOWN:
        if keyword not in schema:
            continue
        value = schema[keyword]
        if keyword in _WITH_VALUE:
            words.append(f"{keyword}({value})")
        elif keyword == "format":
            words.append(f"format({value})" + ("" if value in doc.assert_formats else " (annotation)"))
        elif keyword in ("enum", "const"):
            values = value if keyword == "enum" else [value]
            words.append(f"{keyword}({','.join(map(str, values))})")
        elif keyword == "additionalProperties" and value is False:
            words.append("additionalProperties(false): closed")
        else:
            words.append(keyword)
    return words
