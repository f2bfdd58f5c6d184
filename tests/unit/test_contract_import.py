"""`foodtaster contract import`: a JSON Schema printed as a pandera module that the pandera
front-end reads into the contract it says; what pandera cannot say is a `# not carried over`
line naming the keyword and its JSON pointer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from foodtaster.contract import read_contract
from foodtaster.contract.describe import describe
from foodtaster.contract.model import ContractError
from foodtaster.contract.to_pandera import pandera_module, pandera_module_of

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NESTED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "shop order",
    "type": "object",
    "required": ["id", "data", "created"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^o-[0-9]+$", "minLength": 3, "maxLength": 40},
        "kind": {"enum": ["created", "paid", None]},
        "version": {"const": 2},
        "created": {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}]},
        "at": {"type": "string", "format": "date-time", "description": "an annotation"},
        "data": {
            "type": "object",
            "required": ["customer", "lines"],
            "properties": {
                "customer": {"$ref": "#/$defs/customer"},
                "ship_to": {"oneOf": [{"$ref": "#/$defs/address"}, {"type": "null"}]},
                "lines": {"type": "array", "minItems": 1, "maxItems": 50, "items": {"$ref": "#/$defs/line"}},
                "returns": {"type": ["array", "null"], "items": {"$ref": "#/$defs/line"}},
                "tags": {"type": "array", "uniqueItems": True,
                         "items": {"type": ["string", "null"], "maxLength": 8}},
                "app.name": {"type": "string", "x-owner": "team-a"},
                "due": {"type": "string", "format": "date"},
                "score": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.01},
                "extra": {"type": "object"},
            },
        },
    },
    "$defs": {
        "customer": {"type": "object", "required": ["email"],
                     "properties": {"email": {"type": "string", "format": "email"},
                                    "vip": {"type": "boolean"}}},
        "address": {"type": "object", "additionalProperties": False, "required": ["zip"],
                    "properties": {"zip": {"type": "string"}}, "patternProperties": {"^x-": {}}},
        "line": {"type": "object", "required": ["qty"],
                 "properties": {"qty": {"type": "integer", "minimum": 1, "maximum": 99},
                                "sku": {"type": ["string", "null"]}}},
    },
}


def load(module_text: str, name: str):
    namespace: dict = {"__name__": "imported"}
    # as a module of its own: without this file's `from __future__ import annotations`
    exec(compile(module_text, "<imported>", "exec", dont_inherit=True), namespace)  # noqa: S102
    return read_contract(namespace[name])


def slots(contract) -> dict[str, tuple]:
    return {r.path: (r.type, r.required, r.nullable, r.checks) for r in describe(contract)}


def test_a_nested_schema_becomes_the_contract_it_says():
    text = pandera_module_of(NESTED, "shop order", "order.schema.json")
    contract = load(text, "ShopOrder")
    assert slots(contract) == {
        "id": ("string", True, False, ("str_contains(^o-[0-9]+$)", "str_length(min_value=3,max_value=40)")),
        "kind": ("string", False, True, ("isin(created,paid)",)),
        "version": ("integer", False, False, ("isin(2)",)),
        "at": ("timestamp", False, False, ()),
        "data": ("object", True, False, ()),
        "data.customer": ("object", True, False, ()),
        "data.customer.email": ("string", True, False, ()),
        "data.customer.vip": ("boolean", False, False, ()),
        "data.ship_to": ("object", False, True, ()),
        "data.ship_to.zip": ("string", True, False, ()),
        "data.lines": ("array", True, False, ("greater_than_or_equal_to(1)", "less_than_or_equal_to(50)")),
        "data.lines[].qty": ("integer", True, False,
                             ("greater_than_or_equal_to(1)", "less_than_or_equal_to(99)")),
        "data.lines[].sku": ("string", False, True, ()),
        "data.returns": ("array", False, True, ()),
        "data.returns[].qty": ("integer", True, False,
                               ("greater_than_or_equal_to(1)", "less_than_or_equal_to(99)")),
        "data.returns[].sku": ("string", False, True, ()),
        "data.tags": ("array", False, False, ()),
        "data.tags[]": ("string", True, True, ("str_length(8)",)),
        'data["app.name"]': ("string", False, False, ()),
        "data.due": ("date", False, False, ()),
        "data.score": ("number", False, False, ("greater_than(0)", "less_than(1)", "multiple_of(0.01)")),
    }
    assert contract.strict is False  # the message is closed, data and ship_to's address are open/closed
    assert text.count("class Line(") == 1  # one element model a $ref, used twice
    assert "import foodtaster.checks  # noqa: F401  registers iso_timestamp and multiple_of" in text


def test_what_pandera_cannot_say_is_a_line_naming_keyword_and_pointer():
    text = pandera_module_of(NESTED, "shop order")
    notes = [line.strip() for line in text.splitlines() if "not carried over" in line]
    header = text[:text.index('"""', 3)]  # where a reading differs, not a keyword: said once
    assert "includes 1.0" in header and "ECMA-262" in header and "close to RFC 3339" in header
    expected = [
        "# not carried over: additionalProperties at #/additionalProperties",
        "# not carried over: additionalProperties at #/$defs/address/additionalProperties",
        "# not carried over: oneOf at #/properties/created/oneOf",
        "# not carried over: format 'email' at #/$defs/customer/properties/email/format",
        "# not carried over: patternProperties at #/$defs/address/patternProperties",
        "# not carried over: uniqueItems at #/properties/data/properties/tags/uniqueItems",
        "# not carried over: type object at #/properties/data/properties/extra",
    ]
    for start in expected:
        assert sum(note.startswith(start) for note in notes) == 1, (start, notes)
    assert len(notes) == len(expected)


def test_a_model_whose_every_object_is_closed_is_strict():
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "object": {"type": "object", "additionalProperties": False, "properties": {"b": {"type": "integer"}}},
        "str": {"type": "string"}, "class": {"type": "boolean"}}}
    text = pandera_module_of(schema, "closed")
    assert "not carried over" not in text
    contract = load(text, "Closed")
    assert contract.strict is True
    assert [(f.name, f.json_type.name) for f in contract.fields] == [
        ("object", "object"), ("object.b", "integer"), ("str", "string"), ("class", "boolean")]
    # a field named like a type would shadow it for the annotations after it
    assert "f_object: Series[object]" in text and "f_str: Series[str]" in text


def test_draft07_refs_anchors_and_refs_it_cannot_follow():
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/n", "minimum": 100},  # draft-07: the sibling is ignored
            "b": {"$ref": "#word"},
            "c": {"$ref": "https://example.com/other.json"},
            "d": {"$ref": "#/definitions/tree"},
        },
        "definitions": {
            "n": {"type": "integer", "maximum": 5},
            "w": {"$anchor": "word", "type": "string", "enum": ["x", "y"]},
            "tree": {"type": "object",
                     "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/tree"}}}},
        },
    }
    text = pandera_module_of(schema, "refs")
    assert "# not carried over: $ref 'https://example.com/other.json' at #/properties/c" in text
    assert "# not carried over: $ref '#/definitions/tree' at #/definitions/tree/properties/kids/items" in text
    rows = slots(load(text, "Refs"))
    assert rows["a"] == ("integer", False, False, ("less_than_or_equal_to(5)",))
    assert rows["b"] == ("string", False, False, ("isin(x,y)",))
    assert "c" not in rows


def test_a_schema_that_is_no_object_is_refused(tmp_path):
    with pytest.raises(ContractError, match="must be of type object"):
        pandera_module_of({"type": "array"}, "x")
    with pytest.raises(ContractError, match="names nothing"):
        pandera_module_of({"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}}, "x")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ContractError, match="not a JSON Schema file"):
        pandera_module(tmp_path / "bad.json")


def test_the_command_prints_the_module(tmp_path):
    path = tmp_path / "shop_order.schema.json"
    path.write_text(json.dumps({k: v for k, v in NESTED.items() if k != "title"}))
    env = {**os.environ, "PYTHONPATH": PROJECT_ROOT}
    done = subprocess.run([sys.executable, "-m", "foodtaster", "contract", "import", str(path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == pandera_module(path)
    assert "class ShopOrder(pa.DataFrameModel):" in done.stdout
    gone = subprocess.run([sys.executable, "-m", "foodtaster", "contract", "import",
                           str(tmp_path / "no.json")], capture_output=True, text=True, env=env, timeout=120)
    assert gone.returncode == 2 and "not a JSON Schema file" in gone.stderr
