"""A JSON Schema as a pandera module, printed: `foodtaster contract import SCHEMA.json`.

The module is the contract language of docs/judging.md, "Nested messages" (fields flattened
by path, `alias="data.customer.email"`; an array `Series[int]` with `metadata={"items":
Element}`; an object `metadata={"object": True}`), to start from when a team wants Python
checks on top of the producer's schema. It reads the document itself (local `#/...` refs
resolved here, simply); it is no judge: the engine judges a `.json` contract by its own reader.

What pandera cannot say (`oneOf` other than "this or null", `not`, `uniqueItems`, a union of
types, `patternProperties`, ...) becomes a line `# not carried over: <keyword> at <pointer>`
where it was met, never dropped in silence.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from foodtaster.contract.model import ContractError
from foodtaster.contract.path import Path

# Keywords that assert something, by the JSON type they apply to (None: every value). Other
# keywords (title, description, default, examples, $comment, x-...) are annotations.
APPLIES_TO: dict[str, str | None] = {
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), "number"),
    **dict.fromkeys(("minLength", "maxLength", "pattern", "format"), "string"),
    **dict.fromkeys(("items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains",
                     "minItems", "maxItems", "uniqueItems", "unevaluatedItems"), "array"),
    **dict.fromkeys(("properties", "patternProperties", "additionalProperties", "propertyNames",
                     "required", "dependentRequired", "dependentSchemas", "dependencies",
                     "minProperties", "maxProperties", "unevaluatedProperties"), "object"),
    **dict.fromkeys(("type", "enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                     "$ref", "$dynamicRef", "$recursiveRef"), None),
}
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
# Names a field may not take: the class body's annotations read them after the fields.
RESERVED = frozenset({"object", "str", "int", "float", "bool", "pa", "Series", "config"})
CHECK_KEYWORDS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt",
                  "multipleOf": "multiple_of"}
# The checks `foodtaster.checks` registers with pandera: the module then imports it.
REGISTERED = ("iso_timestamp", "multiple_of")


def pointer_text(parts: tuple[str, ...]) -> str:
    """A JSON pointer as a URI fragment: `#/properties/data`, `~` and `/` escaped."""
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass
class _Field:
    attr: str
    path: Path
    dtype: str
    kwargs: list[str] = field(default_factory=list)


@dataclass
class _Model:
    name: str
    doc: str
    body: list[_Field | str] = field(default_factory=list)  # fields and comment lines, in order
    closed: list[tuple[bool, str]] = field(default_factory=list)  # each object: closed?, its pointer


@dataclass
class _Node:
    """A schema after its `$ref`s and a "this or null" combinator: what a value must be."""

    schema: dict[str, Any]
    at: tuple[str, ...]
    types: set[str]
    nullable: bool
    handled: set[str]


class _Reader:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        draft = str(document.get("$schema", ""))
        self.ref_siblings = not re.search(r"draft-0[3-7]", draft)  # 2019-09 on: $ref is one keyword of many
        self.models: list[_Model] = []
        self.by_ref: dict[str, str] = {}
        self.building: set[str] = set()
        self.uses_timestamp = self.uses_int = self.uses_pattern = False
        self.registered: set[str] = set()

    # ---- schemas -------------------------------------------------------------------------

    def resolve(self, schema: Any, at: tuple[str, ...], model: _Model, seen: tuple = ()) -> tuple[Any, tuple]:
        """The schema a `$ref` names (its siblings merged from 2019-09 on); a local ref only."""
        while isinstance(schema, dict) and "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#") or ref in seen:
                why = "a recursive $ref" if ref in seen else "a $ref outside this file"
                model.body.append(f"# not carried over: $ref {ref!r} at {pointer_text(at)} ({why})")
                return None, at
            seen = (*seen, ref)
            target, parts = self.target(ref)
            if target is None:
                raise ContractError(f"$ref {ref!r} at {pointer_text(at)} names nothing in the schema")
            siblings = {k: v for k, v in schema.items() if k != "$ref"} if self.ref_siblings else {}
            schema = {**target, **siblings} if isinstance(target, dict) else target
            at = parts
        return schema, at

    def target(self, ref: str) -> tuple[Any, tuple[str, ...]]:
        """What a local ref names: a JSON pointer (`#/$defs/x`) or an `$anchor` (`#x`)."""
        if ref == "#" or ref.startswith("#/"):
            parts = tuple(p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/")[1:])
            target: Any = self.document
            for part in parts:
                target = target[int(part)] if isinstance(target, list) and part.isdigit() else \
                    target.get(part) if isinstance(target, dict) else None
            return target, parts
        stack: list[tuple[Any, tuple[str, ...]]] = [(self.document, ())]
        while stack:
            here, at = stack.pop()
            if isinstance(here, dict):
                if here.get("$anchor") == ref[1:]:
                    return here, at
                stack.extend((v, (*at, k)) for k, v in here.items())
            elif isinstance(here, list):
                stack.extend((v, (*at, str(i))) for i, v in enumerate(here))
        return None, ()

    def node(self, schema: Any, at: tuple[str, ...], model: _Model) -> _Node | None:
        schema, at = self.resolve(schema, at, model)
        if schema is None:
            return None
        if isinstance(schema, bool):
            model.body.append(f"# not carried over: the boolean schema {str(schema).lower()} at "
                              f"{pointer_text(at)}")
            return None
        handled: set[str] = {"$ref"}
        nullable = True
        for word in ("oneOf", "anyOf"):  # "this or null": a nullable this
            branches = schema.get(word)
            if isinstance(branches, list) and len(branches) == 2:
                resolved = [self.resolve(b, (*at, word, str(i)), model) for i, b in enumerate(branches)]
                nulls = [i for i, (b, _) in enumerate(resolved) if b == {"type": "null"}]
                if len(nulls) == 1:
                    other, other_at = resolved[1 - nulls[0]]
                    other_type = other.get("type") if isinstance(other, dict) else None
                    if isinstance(other_type, str) and other_type != "null" and not (set(schema) & (
                            set(APPLIES_TO) - {word})):
                        inner = self.node(other, other_at, model)
                        if inner is not None:
                            inner.nullable = True
                        return inner
        written = schema.get("type")
        types = set(written) if isinstance(written, list) else {written} if written else set()
        handled.add("type")
        if "null" in types or not types:
            types.discard("null")
        else:
            nullable = False
        if not types:  # no type: the one its enum or const values share
            values = schema.get("enum", [schema["const"]] if "const" in schema else [])
            found = {_json_type(v) for v in values if v is not None}
            types = found if len(found) == 1 else set()
        if types == {"integer", "number"}:
            types = {"number"}
        for word, values in (("enum", schema.get("enum")), ("const", [schema.get("const")])):
            if word in schema and None not in values:
                nullable = False
        if len(types) != 1:
            combined = [w for w in ("allOf", "anyOf", "oneOf", "not", "if") if w in schema]
            what = "a union of types " + ", ".join(sorted(types)) if types else "no single type"
            model.body.extend(f"# not carried over: {w} at {pointer_text((*at, w))} ({what})"
                              for w in combined or ["type"])
            return None
        return _Node(schema, at, types, nullable, handled)

    def passed_over(self, node: _Node, model: _Model, kind: str) -> None:
        """A line for each assertion of the node that is not carried over."""
        for word in node.schema:
            applies = APPLIES_TO.get(word, "annotation")
            if word in node.handled or applies == "annotation" or applies not in (None, kind):
                continue
            model.body.append(f"# not carried over: {word} at {pointer_text((*node.at, word))}")

    # ---- fields --------------------------------------------------------------------------

    def object_fields(self, node: _Node, model: _Model, base: Path) -> int:
        """The properties of an object into `model` under `base`; how many fields were added."""
        schema, at = node.schema, node.at
        node.handled |= {"properties", "required", "additionalProperties"}
        closed = schema.get("additionalProperties")
        if isinstance(closed, dict):
            model.body.append(f"# not carried over: additionalProperties at "
                              f"{pointer_text((*at, 'additionalProperties'))} (a schema)")
        model.closed.append((closed is False, pointer_text((*at, "additionalProperties"))))
        self.passed_over(node, model, "object")
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        for name in sorted(required - set(properties)):
            model.body.append(f"# not carried over: required {name!r} at {pointer_text((*at, 'required'))} "
                              "(no properties entry says its type)")
        added = 0
        for key, sub in properties.items():
            added += self.field(sub, (*at, "properties", key), model, base.key(key), key in required)
        return added

    def field(self, schema: Any, at: tuple[str, ...], model: _Model, path: Path, required: bool) -> int:
        node = self.node(schema, at, model)
        if node is None:
            return 0
        (kind,) = node.types
        flags = ([] if required else ["required=False"]) + (["nullable=True"] if node.nullable else [])
        if kind == "object":
            declared = _Field(self.attr(model, path), path, "object", [*flags, 'metadata={"object": True}'])
            model.body.append(declared)
            if self.object_fields(node, model, path):
                return 1
            model.body.remove(declared)
            model.body.append(f"# not carried over: type object at {pointer_text(at)} (no property to "
                              "judge under it: kept as an unknown field)")
            return 0
        if kind == "array":
            return self.array(node, model, path, flags)
        checks = self.scalar_checks(node, model, kind)
        dtype = "pa.Date" if kind == "string" and node.schema.get("format") == "date" else SCALARS[kind]
        self.uses_int |= dtype == "int"
        model.body.append(_Field(self.attr(model, path), path, dtype, [*checks, *flags]))
        return 1

    def scalar_checks(self, node: _Node, model: _Model, kind: str) -> list[str]:
        schema, checks = node.schema, []
        values = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
        if values is not None:
            node.handled |= {"enum", "const"}
            kept = [v for v in values if v is not None]
            if all(_json_type(v) in (kind, "integer" if kind == "number" else kind) for v in kept):
                checks.append(f"isin={kept!r}")
            else:
                node.handled -= {"enum", "const"}
        if kind in ("integer", "number"):
            for word, check in CHECK_KEYWORDS.items():
                if isinstance(schema.get(word), int | float) and not isinstance(schema[word], bool):
                    checks.append(f"{check}={schema[word]!r}")
                    node.handled.add(word)
                    self.registered |= {check} & set(REGISTERED)
        if kind == "string":
            lengths = {"min_value": schema.get("minLength"), "max_value": schema.get("maxLength")}
            lengths = {k: v for k, v in lengths.items() if v is not None}
            if lengths:
                checks.append(f"str_length={lengths!r}")
                node.handled |= {"minLength", "maxLength"}
            if isinstance(schema.get("pattern"), str):  # an unanchored search, as str_contains
                checks.append(f"str_contains={schema['pattern']!r}")
                self.uses_pattern = True
                node.handled.add("pattern")
            form = schema.get("format")
            if form == "date-time":
                checks.append("iso_timestamp=()")
                self.uses_timestamp = True
                self.registered.add("iso_timestamp")
            if form in ("date", "date-time"):
                node.handled.add("format")
            elif form is not None:
                node.handled.add("format")
                where = pointer_text((*node.at, "format"))
                model.body.append(f"# not carried over: format {form!r} at {where} (an annotation unless "
                                  "the dataset asserts it)")
        self.passed_over(node, model, kind)
        return checks

    def array(self, node: _Node, model: _Model, path: Path, flags: list[str]) -> int:
        schema, at = node.schema, node.at
        items = schema.get("items")
        node.handled |= {"items", "minItems", "maxItems"}
        bounds = [f"{check}={schema[word]!r}" for word, check in (("minItems", "ge"), ("maxItems", "le"))
                  if isinstance(schema.get(word), int)]
        element = self.element(items, (*at, "items"), path, model) if isinstance(items, dict) else None
        if element is None:
            node.handled -= {"items"}
            model.body.append(f"# not carried over: type array at {pointer_text(at)} (no single "
                              "schema for its items)")
        self.passed_over(node, model, "array")
        if element is None:
            return 0
        model.body.append(_Field(self.attr(model, path), path, "int",
                                 [*bounds, *flags, f'metadata={{"items": {element}}}']))
        return 1

    def element(self, items: dict[str, Any], at: tuple[str, ...], path: Path, owner: _Model) -> str | None:
        """The class name of the element model of an array's `items`, written once a `$ref`."""
        ref = items.get("$ref") if len(items) == 1 else None
        if ref in self.by_ref:
            return self.by_ref[ref]
        if ref in self.building:  # an element model inside itself: pandera has no recursive model
            owner.body.append(f"# not carried over: $ref {ref!r} at {pointer_text(at)} (a recursive $ref)")
            return None
        stem = ref.rsplit("/", 1)[-1] if ref else "_".join(str(s) for s in path.steps) + "_item"
        model = _Model(self.class_name(stem), f"One element of `{path}`.")
        if ref:
            self.building.add(ref)
        node, done = self.node(items, at, model), False
        if node is not None and (node.types == {"array"} or node.types == {"object"} and node.nullable):
            model.body.append(f"# not carried over: items at {pointer_text(at)} (an array of arrays or of "
                              "nullable objects)")
        elif node is not None and node.types == {"object"}:
            done = self.object_fields(node, model, Path()) > 0
        elif node is not None:
            done = self.field(items, at, model, Path.of("value"), True) > 0
        self.building.discard(ref or "")
        if node is None or not done:
            owner.body.extend(line for line in model.body if isinstance(line, str))
            return None
        self.models.append(model)
        if ref:
            self.by_ref[ref] = model.name
        return model.name

    # ---- names ---------------------------------------------------------------------------

    def class_name(self, stem: str) -> str:
        name = "".join(w[:1].upper() + w[1:] for w in re.split(r"[^0-9A-Za-z]+", stem) if w) or "Element"
        name = name if name[0].isalpha() else "M" + name
        taken = {m.name for m in self.models}
        return next(f"{name}{n or ''}" for n in range(len(taken) + 2) if f"{name}{n or ''}" not in taken)

    @staticmethod
    def attr(model: _Model, path: Path) -> str:
        """A Python name for the field: its last key, more of the path when that one is taken."""
        taken = {f.attr for f in model.body if isinstance(f, _Field)}
        keys = [str(s) for s in path.steps]
        for n in range(1, len(keys) + 1):
            name = re.sub(r"\W+", "_", "_".join(keys[-n:])).strip("_").lower() or "field"
            name = f"f_{name}" if name[0].isdigit() or keyword.iskeyword(name) or name in RESERVED else name
            if name not in taken:
                return name
        return next(f"{name}_{n}" for n in range(2, len(taken) + 3) if f"{name}_{n}" not in taken)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "null")


def _render(model: _Model) -> list[str]:
    closed = [where for is_closed, where in model.closed if is_closed]
    strict = bool(closed) and len(closed) == len(model.closed)
    lines = [f"class {model.name}(pa.DataFrameModel):", f'    """{model.doc}"""', ""]
    if closed and not strict:
        lines += [f"    # not carried over: additionalProperties at {where} (Config.strict is the whole "
                  "model's: some of its objects are open)" for where in closed]
    for entry in model.body:
        if isinstance(entry, str):
            lines.append(f"    {entry}")
            continue
        kwargs = list(entry.kwargs)
        if entry.attr != str(entry.path):
            kwargs.insert(0, f"alias={str(entry.path)!r}")
        lines.append(f"    {entry.attr}: Series[{entry.dtype}] = pa.Field({', '.join(kwargs)})")
    lines += ["", "    class Config:", f"        strict = {strict}"]
    return lines


def pandera_module(schema_file: str | FilePath, name: str | None = None) -> str:
    """The pandera module equivalent to a JSON Schema file, as text."""
    source = FilePath(schema_file)
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ContractError(f"{source}: not a JSON Schema file: {err}") from err
    return pandera_module_of(document, name or document.get("title") or source.name.split(".")[0],
                             str(source.name))


def pandera_module_of(document: dict[str, Any], name: str, source: str = "the schema") -> str:
    if not isinstance(document, dict):
        raise ContractError(f"{source}: a JSON Schema of a message is an object")
    reader = _Reader(document)
    root = _Model(reader.class_name(name), f"The message, as {source} describes it.")
    node = reader.node(document, (), root)
    if node is None or node.types != {"object"}:
        raise ContractError(f"{source}: the message's schema must be of type object")
    reader.object_fields(node, root, Path())
    reader.models.append(root)
    out = [f'"""Generated by `foodtaster contract import {source}`: a start to edit, not the contract',
           "the engine judges by (point pipeline.yaml at the .json for that).", ""]
    if reader.uses_int:
        out.append("- JSON Schema's integer includes 1.0; an int here is a number without a fraction.")
    if reader.uses_pattern:
        out.append("- A pattern is ECMA-262 in the schema, Python's re here (its digit, word and space "
                   "classes match more).")
    if reader.uses_timestamp:
        out.append("- date-time is read as iso_timestamp (ISO-8601 with a zone): close to RFC 3339, not it.")
    out += ['"""', "", "import pandera.pandas as pa", "from pandera.typing import Series", ""]
    if reader.registered:
        names = " and ".join(n for n in REGISTERED if n in reader.registered)
        out += [f"import foodtaster.checks  # noqa: F401  registers {names}", ""]
    for model in reader.models:
        out += ["", *_render(model), ""]
    return "\n".join(out).rstrip() + "\n"
