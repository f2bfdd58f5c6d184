"""Spark's verdicts on JSON Schema contracts held to the reference validator, `jsonschema`.

Messages start from valid seeds of each schema and are mutated by Hypothesis, one to three
changes each (a value of another type, a key dropped or added, a number moved, an element
added), then judged by the Spark job's judging (`judging.validate_lines`) and by `jsonschema`
for the draft the schema names. (hypothesis-jsonschema, which would draw messages from the
schema itself, cannot draw objects on this Hypothesis: it calls an internal, `many.more`,
that Hypothesis 6.170 removed.) On every message: the same verdict; on a failing one, the same failing
places (`jsonschema`'s error paths, ours the reasons' columns: a missing or unexpected
property is named by its own path, one step under the object `jsonschema` names).

A value the schema allows but valid/ cannot hold (an integer beyond 64 bits, a number
beyond a double) is `out_of_range` here (docs/judging.md): such messages are drawn only
from the bounds below, and one test holds that case on its own.
"""

from __future__ import annotations

import copy
import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.frames import lines_frame

from foodtaster.contract.json_schema import read_json_schema
from foodtaster.contract.model import JsonType
from foodtaster.contract.path import Path
from foodtaster.engine.judging.judging import validate_lines

DRAFT7 = "http://json-schema.org/draft-07/schema#"

# Schemas that use the validation vocabulary at depth (draft-07: what hypothesis-jsonschema draws).
SCHEMAS = {
    "webhook": {
        "$schema": DRAFT7, "type": "object", "required": ["id", "ts", "data"], "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^ev_[a-z0-9]{4,8}$"},
            "ts": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 4102444800},
                             {"type": "string", "pattern": "^2[0-9]{3}-[01][0-9]-[0-3][0-9]T"}]},
            "kind": {"enum": ["created", "paid", "refunded"]},
            "livemode": {"const": False},
            "data": {"type": "object", "required": ["amount", "items"],
                     "properties": {
                         "amount": {"type": "integer", "minimum": 0, "maximum": 10**9, "multipleOf": 5},
                         "ratio": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1},
                         "owner": {"anyOf": [{"$ref": "#/definitions/user"}, {"$ref": "#/definitions/team"}]},
                         "items": {"type": "array", "minItems": 1, "maxItems": 4, "uniqueItems": True,
                                   "items": {"$ref": "#/definitions/item"}},
                         "note": {"type": "string", "minLength": 1, "maxLength": 8},
                     },
                     "dependencies": {"note": ["ratio"]},
                     "propertyNames": {"maxLength": 12}},
        },
        "definitions": {
            "user": {"type": "object", "required": ["login"], "properties": {
                "login": {"type": "string", "minLength": 2, "maxLength": 6}}, "additionalProperties": False},
            "team": {"type": "object", "required": ["slug"], "properties": {
                "slug": {"type": "string", "enum": ["core", "ops"]}}, "additionalProperties": False},
            "item": {"type": "object", "required": ["sku", "qty"], "properties": {
                "sku": {"type": "string", "minLength": 1, "maxLength": 5},
                "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2}},
                "patternProperties": {"^x-": {"type": "boolean"}}},
        },
    },
    "combinators": {
        "$schema": DRAFT7, "type": "object",
        "properties": {
            "shape": {"type": "object",
                      "properties": {"kind": {"enum": ["circle", "square"]},
                                     "r": {"type": "number", "minimum": 0, "maximum": 100},
                                     "side": {"type": "integer", "minimum": 0, "maximum": 100}},
                      "required": ["kind"],
                      "if": {"properties": {"kind": {"const": "circle"}}},
                      "then": {"required": ["r"]}, "else": {"required": ["side"]}},
            "code": {"allOf": [{"type": "string"}, {"minLength": 2}, {"not": {"const": "xx"}}]},
            "pair": {"type": "array", "items": [{"type": "integer", "minimum": -9, "maximum": 9},
                                                {"type": "string", "maxLength": 4}],
                     "additionalItems": False},
            "bag": {"type": "array", "contains": {"type": "integer", "minimum": 5, "maximum": 9},
                    "maxItems": 3, "items": {"type": ["integer", "string"], "minimum": 0, "maximum": 50,
                                             "maxLength": 4}},
            "meta": {"type": "object", "minProperties": 1, "maxProperties": 2,
                     "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}},
            "never": False,
        },
        "required": ["shape"],
    },
}


def _jsonable(value):
    return json.loads(json.dumps(value))


def _mutate(message, rng: random.Random):
    """A copy with one place changed at random: another type, a key dropped or added, a number moved."""
    mutated = copy.deepcopy(message)
    places = [(None, None)]

    def visit(holder):
        if isinstance(holder, dict):
            for key in list(holder):
                places.append((holder, key))
                visit(holder[key])
        elif isinstance(holder, list):
            for index in range(len(holder)):
                places.append((holder, index))
                visit(holder[index])

    visit(mutated)
    holder, key = rng.choice(places)
    if holder is None:
        if isinstance(mutated, dict):
            mutated[rng.choice(["zz", "a.b", "x-flag", "never"])] = rng.choice([1, "s", None, True])
        return mutated
    value = holder[key]
    move = rng.randrange(4)
    if move == 0 and isinstance(holder, dict):
        del holder[key]
    elif move == 1:
        holder[key] = rng.choice([None, "s", 7, 2.5, True, [], {}, [1, 1], "xx", 10**6])
    elif move == 2 and isinstance(value, int | float) and not isinstance(value, bool):
        holder[key] = value + rng.choice([-1000, -1, 1, 3, 0.5])
    elif isinstance(value, list):
        value.append(rng.choice([value[0] if value else 1, {"sku": "a", "qty": 1}, "t"]))
    elif isinstance(value, dict):
        value[rng.choice(["q", "x-on", "a.b", "sku"])] = rng.choice([1, "v", False])
    else:
        holder[key] = "mutated"
    return mutated


# Valid messages of each schema, the seeds of the mutations.
SEEDS = {
    "webhook": [
        {"id": "ev_ab12", "ts": 1764000000, "kind": "paid", "livemode": False,
         "data": {"amount": 1500, "ratio": 0.5, "owner": {"login": "ann"}, "note": "hi",
                  "items": [{"sku": "A1", "qty": 2, "tags": ["x"], "x-gift": True}, {"sku": "B", "qty": 1}]}},
        {"id": "ev_zz99zz", "ts": "2026-11-20T10:00:00Z",
         "data": {"amount": 0, "ratio": None, "owner": {"slug": "ops"}, "items": [{"sku": "C", "qty": 99}]}},
    ],
    "combinators": [
        {"shape": {"kind": "circle", "r": 1.5}, "code": "ab", "pair": [3, "x"], "bag": [5, "s", 0],
         "meta": {"a": 1}},
        {"shape": {"kind": "square", "side": 4}, "pair": [-9], "bag": [9]},
    ],
}


@st.composite
def messages(draw, name):
    """The seeds of a schema and mutations of them: one to three changes each."""
    rng = draw(st.randoms(use_true_random=False))
    seeds = SEEDS[name]
    batch = [copy.deepcopy(seed) for seed in seeds]
    for _ in range(20):
        message = rng.choice(seeds)
        for _ in range(rng.randint(1, 3)):
            message = _mutate(message, rng)
        batch.append(message)
    return batch


def _reference(schema, message):
    """`jsonschema`'s verdict: the paths of its errors (each error's own place), None when valid."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = list(validator.iter_errors(message))
    return None if not errors else {Path(tuple(e.absolute_path)) for e in errors}


def _ours(spark, contract, batch):
    lines = [json.dumps(m).encode() for m in batch]
    rows = validate_lines(lines_frame(spark, lines), contract, 1 << 20).orderBy("_row_id").collect()
    return [None if not row["_reasons"] else {r.column for r in row["_reasons"]} for row in rows]


def _agree(reference_paths, our_columns):
    """Every place the reference names is ours or its parent; every place of ours is under one."""
    ours = {Path() if c is None else Path.parse(c) for c in our_columns}
    named = all(any(o == p or o.parent == p for o in ours) for p in reference_paths)
    placed = all(any(o == p or o.is_under(p) for p in reference_paths) for o in ours)
    return named and placed


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_spark_and_jsonschema_agree_on_every_message(spark, tmp_path, name):
    schema = SCHEMAS[name]
    path = tmp_path / f"{name}.schema.json"
    path.write_text(json.dumps(schema))
    contract = read_json_schema(path)
    seen = {"valid": 0, "invalid": 0}

    @settings(max_examples=12, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(batch=messages(name))
    def check(batch):
        for message, ours in zip(batch, _ours(spark, contract, batch), strict=True):
            reference = _reference(schema, message)
            assert (ours is None) == (reference is None), (message, ours, reference)
            if reference is not None:
                assert _agree(reference, ours), (message, ours, reference)
            seen["valid" if reference is None else "invalid"] += 1

    check()
    assert seen["valid"] > 20 and seen["invalid"] > 150, seen


def test_what_valid_cannot_hold_is_out_of_range_though_the_schema_allows_it(spark, tmp_path):
    """An integer is a 64-bit long in valid/ (1.0 and 1e2 are integers, as JSON Schema counts
    them, and are written 1 and 100); one past 64 bits is `out_of_range`, as the pandera
    front-end has it, unless the schema's own bounds pass 64 bits: then decimal(38,0)."""
    path = tmp_path / "big.schema.json"
    path.write_text(json.dumps({"properties": {"n": {"type": "integer"}, "x": {"type": "number"},
                                               "w": {"type": "integer", "maximum": 10**30}, "any": {}}}))
    contract = read_json_schema(path)
    assert {f.name: f.json_type.name for f in contract.fields}["n"] == "integer"
    assert contract.slot("w").json_type == JsonType("decimal", 38, 0)
    lines = [b'{"n": 1' + b"0" * 40 + b"}", b'{"x": 1}', b'{"n": 9223372036854775807, "x": 1.5}',
             b'{"n": 9223372036854775808}', b'{"n": -9223372036854775809}', b'{"n": 1.0}', b'{"n": 1e2}',
             b'{"n": 1.5e19}', b'{"n": 2.5}', b'{"w": 1' + b"0" * 25 + b"}", b'{"any": 1e400}']
    rows = validate_lines(lines_frame(spark, lines), contract, 1 << 20).orderBy("_row_id").collect()
    beyond = [("n.out_of_range", "n")]
    assert [sorted((r.rule, r.column) for r in row["_reasons"]) for row in rows] == [
        beyond, [], [], beyond, beyond, [], [], beyond, [("n.type(integer)", "n")], [],
        [("any.out_of_range", "any")]]
    assert [rows[i]["n"] for i in (2, 5, 6)] == [2**63 - 1, 1, 100] and rows[9]["w"] == 10**25
    assert "beyond 64 bits" in rows[3]["_reasons"][0].message
