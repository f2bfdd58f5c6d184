"""The JSON Schema front-end: a producer's JSON Schema file read into the contract model.

The schema is judged as the spec says by a compiled validator (`jsonschema_rs`, the draft its
`$schema` names: draft-04, -06, -07, 2019-09 or 2020-12; 2020-12 when it names none), one
message at a time, in the Spark job (`foodtaster.engine.judging.schema_judge`); the contract's
`fields` are the schema's *typed view*, what valid/ holds (docs/judging.md, "JSON Schema
contracts"):

- a property under `properties` of an object schema with one type is a typed column (a
  string, a number as a double, an integer as a 64-bit long (one past 64 bits is
  `out_of_range`; decimal(38,0) only where the schema's own bounds pass 64 bits), a boolean, an object as a
  struct, an array of one item schema as an array), `"null"` beside the type making it
  nullable; every other value (a type union, a schema of `oneOf`/`anyOf`, no `type`) is
  kept as its JSON text, a JSON null as the text `null`, apart from a missing key (SQL null);
- what the typed view does not name is kept whole in `_unknown`, path -> JSON text.

Read here, before a batch is landed: the draft, every `$ref` (local pointers, `$anchor`s
and `$id`s of the document, and files beside it; a remote one is refused by name), the
`format`s a dataset asks to assert, and the keywords a dataset lists under `ignore`
(removed before the schema is compiled, and said in the summary and the page). Nothing
is dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlparse

from foodtaster.contract.document_text import load
from foodtaster.contract.model import ARRAY, OBJECT, Contract, ContractError, FieldRule, JsonType, Scope
from foodtaster.contract.path import Path

DRAFTS = {
    "http://json-schema.org/draft-04/schema": "draft-04",
    "http://json-schema.org/draft-06/schema": "draft-06",
    "http://json-schema.org/draft-07/schema": "draft-07",
    "https://json-schema.org/draft/2019-09/schema": "2019-09",
    "https://json-schema.org/draft/2020-12/schema": "2020-12",
}
DEFAULT_DRAFT = "2020-12"
# `format`s a dataset may ask to assert (`assert_formats:`); every other format is an annotation.
ASSERTABLE_FORMATS = ("date", "date-time", "email", "uri", "uuid", "ipv4")

# Keywords whose value is a schema, an array of schemas, or an object of schemas.
_ONE_SCHEMA = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then",
               "else", "unevaluatedItems", "unevaluatedProperties", "items")
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
               "dependencies")

_SCALARS = {"string": JsonType("string"), "number": JsonType("number"), "boolean": JsonType("boolean"),
            "integer": JsonType("integer")}
WIDE_INTEGER = JsonType("decimal", 38, 0)  # an integer whose schema admits values past 64 bits
_LONG = (-(2**63), 2**63 - 1)


def _scalar(kind: str, schema: Any) -> JsonType:
    """A scalar's column type: an integer is a long unless the schema's own bounds admit a value
    past 64 bits (`maximum: 1e20`, or a `minimum` alone, beyond it): then decimal(38,0)."""
    if kind != "integer" or not isinstance(schema, dict):
        return _SCALARS[kind]
    bounds = [schema.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
    numbers = [b for b in bounds if isinstance(b, int | float) and not isinstance(b, bool)]
    return WIDE_INTEGER if any(not _LONG[0] <= b <= _LONG[1] for b in numbers) else _SCALARS[kind]
JSON_TEXT = JsonType("json")


@dataclass(frozen=True)
class JsonSchemaDoc:
    """A schema file as read: its document (the keywords under `ignore` taken out), its draft,
    the files beside it that it refers to (by URI), and what the dataset asked."""

    file: str
    document: Any = field(compare=False)
    draft: str
    base_uri: str
    resources: dict[str, Any] = field(compare=False, default_factory=dict)
    assert_formats: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # JSON pointers of the keywords not judged, as the dataset said

    def validator(self) -> Any:
        """The compiled validator (`jsonschema_rs`), offline: every resource is in `resources`."""
        import jsonschema_rs

        formats = {name: (lambda _value: True) for name in _KNOWN_FORMATS
                   if name not in self.assert_formats}
        registry = jsonschema_rs.Registry([(uri, doc) for uri, doc in self.resources.items()]) \
            if self.resources else None
        return jsonschema_rs.validator_for(
            self.document, validate_formats=bool(self.assert_formats), formats=formats or None,
            registry=registry, base_uri=self.base_uri, offline=True,
        )


# Formats jsonschema_rs asserts when asked: those not asked for are made to pass.
_KNOWN_FORMATS = ("date", "date-time", "time", "duration", "email", "idn-email", "hostname",
                  "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference",
                  "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex")


def read_json_schema(file: str | FilePath, *, ignore: tuple[str, ...] = (),
                     assert_formats: tuple[str, ...] = ()) -> Contract:
    """A JSON Schema file as a contract, or a ContractError naming the keyword and its pointer."""
    path = FilePath(file).resolve()
    return schema_contract(_load(path), path, ignore=ignore, assert_formats=assert_formats)


def schema_contract(document: Any, path: FilePath, *, ignore: tuple[str, ...] = (),
                    assert_formats: tuple[str, ...] = (), name: str | None = None,
                    source: str | None = None, passed_over: tuple[str, ...] = ()) -> Contract:
    """A JSON Schema document read from `path` (or found in it: an AsyncAPI message's payload)
    as a contract; `$ref`s resolved against the file."""
    draft = _draft_of(document, path)
    for name in assert_formats:
        if name not in ASSERTABLE_FORMATS:
            raise ContractError(f"{path.name}: assert_formats names {name!r}; formats that can be asserted: "
                                + ", ".join(ASSERTABLE_FORMATS))
    base = _base_uri(document, path)
    resources = _references(document, base, path)
    document, ignored = _without_ignored(document, ignore, path)
    doc = JsonSchemaDoc(file=str(path), document=document, draft=draft, base_uri=base, resources=resources,
                        assert_formats=tuple(assert_formats), ignored=ignored)
    try:
        doc.validator()
    except Exception as err:  # jsonschema_rs's own refusal: a bad regex, a bad keyword value
        raise ContractError(f"{path.name}: the schema cannot be compiled: {err}") from err
    fields = _typed_view(document, document, Path())
    title = document.get("title") if isinstance(document, dict) else None
    return Contract(name=str(name or title or path.stem), fields=tuple(fields), strict=False,
                    source=source or str(path), schema=doc, passed_over=passed_over)


def _load(path: FilePath) -> Any:
    return load(path, "JSON Schema", json.loads)


def _draft_of(document: Any, path: FilePath) -> str:
    if not isinstance(document, dict) or "$schema" not in document:
        return DEFAULT_DRAFT
    uri = str(document["$schema"]).rstrip("#")
    if uri not in DRAFTS:
        raise ContractError(f"{path.name}: $schema {document['$schema']!r} is no draft Foodtaster judges; "
                            "one of " + ", ".join(DRAFTS))
    return DRAFTS[uri]


def _base_uri(document: Any, path: FilePath) -> str:
    own = document.get("$id") if isinstance(document, dict) else None
    return str(own) if isinstance(own, str) and urlparse(own).scheme else path.as_uri()


def subschemas(schema: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Every schema inside `schema` (itself first), each with its JSON pointer."""
    yield pointer, schema
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        where = f"{pointer}/{_escape(key)}"
        if key in _SCHEMA_LIST and isinstance(value, list):
            for i, inner in enumerate(value):
                yield from subschemas(inner, f"{where}/{i}")
        elif key in _SCHEMA_MAP and isinstance(value, dict):
            for name, inner in value.items():
                if key == "dependencies" and isinstance(inner, list):
                    continue  # draft-07's dependencies: a list of names is no schema
                yield from subschemas(inner, f"{where}/{_escape(name)}")
        elif key in _ONE_SCHEMA and isinstance(value, dict | bool):
            yield from subschemas(value, where)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _references(document: Any, base: str, path: FilePath) -> dict[str, Any]:
    """The files beside the schema that its `$ref`s name, by URI; a remote `$ref` refused."""
    ids = {urldefrag(join_uri(base, s["$id"]))[0] for _, s in subschemas(document)
           if isinstance(s, dict) and isinstance(s.get("$id"), str)}
    ids.add(urldefrag(base)[0])
    resources: dict[str, Any] = {}
    pending = [(document, base, path)]
    while pending:
        schema, at_base, at_path = pending.pop()
        for pointer, inner in subschemas(schema):
            if not isinstance(inner, dict):
                continue
            for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
                ref = inner.get(keyword)
                if not isinstance(ref, str):
                    continue
                _refuse_bad_uri(ref, keyword, pointer, at_path)
                target = urldefrag(join_uri(at_base, ref))[0]
                if target in ids or target in resources or target.rstrip("#") in DRAFTS:
                    continue  # a meta-schema: the validator ships every draft's
                beside = _file_beside(target, at_base, at_path)
                if beside is None:
                    raise ContractError(f"{at_path.name}: {keyword} {ref!r} at #{pointer} names a schema "
                                        "that is not in this file or a file beside it; remote references "
                                        "are not fetched: save it beside the schema and refer to it by name")
                resources[target] = loaded = _load(beside)
                pending.append((loaded, target, beside))
    return resources


def join_uri(base: str, ref: str) -> str:
    """`ref` resolved against `base`; a fragment alone stays in `base`'s document whatever its
    scheme (`urljoin` leaves a URN's `#/$defs/bar` bare: `urn:uuid:…` is no hierarchical URI)."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


# What a URI reference may hold (RFC 3986): unreserved, reserved and `%` with two hex digits.
_URI_REFERENCE = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


def _refuse_bad_uri(ref: str, keyword: str, pointer: str, path: FilePath) -> None:
    if not _URI_REFERENCE.match(ref):
        bad = next(i for i, c in enumerate(ref) if not _URI_REFERENCE.match(ref[i:i + 3] if c == "%" else c))
        raise ContractError(f"{path.name}: {keyword} {ref!r} at #{pointer} is no valid URI reference: "
                            f"{ref[bad]!r} at index {bad}; percent-encode it (a space is %20, % is %25)")


def _file_beside(target: str, base: str, path: FilePath) -> FilePath | None:
    """The local file a reference's URI names, relative to the schema: a `file:` URI in the
    schema's folder, or a URI under the base `$id`'s folder mapped onto it."""
    folder = path.parent
    parsed = urlparse(target)
    if parsed.scheme == "file":
        candidate = FilePath(parsed.path)
    else:
        stem = base.rsplit("/", 1)[0] + "/"
        if not target.startswith(stem):
            return None
        candidate = folder / target[len(stem):]
    candidate = candidate.resolve()
    return candidate if candidate.is_file() and folder.resolve() in candidate.parents else None


def _without_ignored(document: Any, ignore: tuple[str, ...], path: FilePath) -> tuple[Any, tuple[str, ...]]:
    """The document with each keyword named under `ignore` (a JSON pointer) taken out."""
    if not ignore:
        return document, ()
    document = json.loads(json.dumps(document))
    for pointer in ignore:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("#").split("/")[1:]]
        holder = document
        for part in parts[:-1]:
            holder = holder[int(part)] if isinstance(holder, list) and part.isdigit() else \
                holder.get(part) if isinstance(holder, dict) else None
        if not parts or not isinstance(holder, dict) or parts[-1] not in holder:
            raise ContractError(f"{path.name}: ignore names {pointer!r}, which is no keyword of the schema; "
                                "write the keyword's JSON pointer, e.g. #/properties/data/not")
        del holder[parts[-1]]
    return document, tuple(ignore)


def resolve(schema: Any, root: Any, seen: int = 0) -> Any:
    """A schema with its local `$ref` followed (for typing only; judging follows every kind)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        schema, seen = _pointed(root, ref), seen + 1
    return schema


def _pointed(root: Any, ref: str) -> Any:
    """What a local JSON pointer `#/...` names in `root` (None where nothing)."""
    target: Any = root
    for part in ref[2:].split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        target = target[int(part)] if isinstance(target, list) and part.isdigit() else target.get(part) \
            if isinstance(target, dict) else None
    return target


def follow(schema: Any, root: Any, chain: frozenset[str] = frozenset()) -> tuple[Any, frozenset[str], bool]:
    """`resolve`, keeping the local `$ref`s followed on the way down (`chain`): a schema that
    refers back to one of them is recursive (a tree node whose items are nodes), true in the
    third place; its place in the typed view is then JSON text, as a validator judges it fine."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            break
        if ref in chain:
            return schema, chain, True
        schema, chain = _pointed(root, ref), chain | {ref}
    return schema, chain, False


def typed_kind(schema: Any) -> tuple[str | None, bool]:
    """The one non-null type a schema asserts (None if several or none), and whether null is allowed."""
    if not isinstance(schema, dict):
        return None, False
    types = schema.get("type")
    listed = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    if not listed and ("enum" in schema or "const" in schema):
        listed = _kinds_of(schema["enum"] if "enum" in schema else [schema["const"]])
    kinds = [t for t in listed if t != "null"]
    if len(kinds) != 1 or any(k in schema for k in ("oneOf", "anyOf", "allOf", "not", "if", "$ref")):
        return None, "null" in listed or not listed
    return kinds[0], "null" in listed


def _kinds_of(values: Any) -> list[str]:
    """The JSON types of an enum's values, where they are all strings or all booleans (and
    null): a closed list of strings is a string column, not JSON text."""
    if not isinstance(values, list):
        return []
    kinds = {"null" if v is None else "boolean" if isinstance(v, bool) else "string" if isinstance(v, str)
             else "other" for v in values}
    return sorted(kinds) if kinds - {"null"} in ({"string"}, {"boolean"}) else []


def _typed_view(schema: Any, root: Any, at: Path, chain: frozenset[str] = frozenset()) -> list[FieldRule]:
    """The slots valid/ holds under an object schema, parents before children; a recursive
    part is JSON text."""
    schema, chain, _ = follow(schema, root, chain)
    fields: list[FieldRule] = []
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    for key, inner in properties.items():
        path = at.key(key)
        inner, inner_chain, recursive = follow(inner, root, chain)
        kind, nullable = typed_kind(inner) if not recursive else (None, True)
        if kind == "object" and inner.get("properties"):
            fields.append(_slot(path, OBJECT, nullable))
            fields += _typed_view(inner, root, path, inner_chain)
        elif kind == "array" and isinstance(inner.get("items"), dict | bool) and "prefixItems" not in inner:
            fields.append(_slot(path, ARRAY, nullable, items=_items(inner["items"], root, inner_chain)))
        elif kind in _SCALARS:
            fields.append(_slot(path, _scalar(kind, inner), nullable))
        else:
            fields.append(_slot(path, JSON_TEXT, True))
    return fields


def _items(schema: Any, root: Any, chain: frozenset[str]) -> Scope:
    schema, chain, recursive = follow(schema, root, chain)
    kind, nullable = typed_kind(schema) if not recursive else (None, True)
    if kind == "object" and schema.get("properties"):
        return Scope(tuple(_typed_view(schema, root, Path(), chain)), strict=False)
    json_type = _scalar(kind, schema) if kind in _SCALARS else JSON_TEXT
    return Scope((_slot(Path.of("value"), json_type, nullable or json_type is JSON_TEXT),), scalar=True)


def _slot(path: Path, json_type: JsonType, nullable: bool, items: Scope | None = None) -> FieldRule:
    # Not required and not judged by Spark's rules: the schema judges; the slot only types.
    return FieldRule(path=path, json_type=json_type, required=False, nullable=True, unique=False,
                     checks=(), items=items)
