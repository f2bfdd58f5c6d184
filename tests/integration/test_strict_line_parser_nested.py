"""Unit tests of the Java parser's nested slots (`jvm/src/foodtaster/jvm/StrictLineParser.java`):
objects at any depth, arrays of objects and of scalars, decimals, dates and strict scopes, read in
the one parse of the line; and the UDF's row, through Spark SQL."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from py4j.java_collections import JavaArray, JavaList
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from foodtaster.contract.path import Path
from foodtaster.engine.judging.layers import UNEXPECTED_TYPE, UNKNOWN_TYPE
from foodtaster.engine.judging.reasons import REASONS

OK, MISSING, NULL, OUT_OF_RANGE, INVALID, UNJUDGED, WRONG = 0, 1, 2, 3, 4, 5, 10
FOUND = {"string": WRONG + 0, "integer": WRONG + 1, "number": WRONG + 2, "boolean": WRONG + 3,
         "object": WRONG + 4, "array": WRONG + 5}


def slot(path: str, json_type: str, **more) -> dict:
    return {"path": path.split("."), "type": json_type, **more}


def decimal(path: str, precision: int, scale: int) -> dict:
    return slot(path, "decimal", precision=precision, scale=scale)


def spec(fields: list[dict], strict: bool = False) -> str:
    return json.dumps({"max_bytes": 1 << 20, "value_chars": 200, "strict": strict, "fields": fields})


# A line's item: the element scope of data.lines, with its own nested array and object.
LINE_FIELDS = [
    slot("sku", "string"), slot("qty", "integer"), decimal("price", 10, 2),
    slot("tags", "array", items={"type": "string"}),
    slot("dims", "object"), slot("dims.w", "number"),
    slot("parts", "array", items={"type": "object", "strict": True, "fields": [slot("n", "integer")]}),
]
FIELDS = [
    slot("id", "string"),
    slot("data", "object"),
    slot("data.customer", "object"),
    slot("data.customer.email", "string"),
    slot("data.customer.address", "object"),
    slot("data.customer.address.city", "string"),
    decimal("data.total", 10, 2),
    slot("data.day", "date"),
    slot("data.lines", "array", items={"type": "object", "strict": True, "fields": LINE_FIELDS}),
    slot("data.scores", "array", items={"type": "integer"}),
    slot("data.amounts", "array", items={"type": "decimal", "precision": 5, "scale": 1}),
    slot("data.days", "array", items={"type": "date"}),
    slot("flag", "boolean"),
]
NAMES = [".".join(f["path"]) for f in FIELDS]
UNDER_DATA = [name for name in NAMES if name.startswith("data.")]
UNDER_CUSTOMER = [name for name in NAMES if name.startswith("data.customer.")]

GOOD = {
    "id": "m-1",
    "data": {
        "customer": {"email": "a@b.c", "address": {"city": "Oslo"}},
        "total": 12.5,
        "day": "2024-02-29",
        "lines": [{"sku": "A", "qty": 2, "price": 1.5, "tags": ["x", "y"], "dims": {"w": 0.5},
                   "parts": [{"n": 1}]}],
        "scores": [1, 2],
        "amounts": [1.5],
        "days": ["2026-01-31"],
    },
    "flag": True,
}


def plain(value):
    """A Py4J value as Python: Java arrays and lists as lists, all the way down."""
    if isinstance(value, (JavaArray, JavaList)):
        return [plain(item) for item in value]
    return value


def triples(values: list, names: list[str], base: int) -> dict[str, tuple]:
    return {name: tuple(values[base + 3 * k: base + 3 * k + 3]) for k, name in enumerate(names)}


def run(parser, line: bytes | dict,
        names: list[str] = NAMES) -> tuple[list | None, dict[str, tuple], list | None]:
    """(the line's reasons as (layer, rule, message), {slot: (value, status, text)}, unexpected)."""
    if isinstance(line, dict):
        line = json.dumps(line).encode()
    out = plain(parser.parse(bytearray(line)))
    assert len(out) == 1 + 3 * len(names) + 2
    problems = None if out[0] is None else [(p[0], p[1], p[3]) for p in out[0]]
    unexpected = None if out[-2] is None else [path for path, _ in out[-2]]
    return problems, triples(out, names, 1), unexpected


def element(values: list, names: list[str]) -> tuple[int, str | None, dict[str, tuple]]:
    """An element of an element scope: (status, text, {slot: (value, status, text)})."""
    return values[0], values[1], triples(values, names, 2)


def with_data(**data) -> dict:
    return {"id": "m-1", "data": data}


@pytest.fixture(scope="module")
def parser(spark):
    return spark._jvm.foodtaster.jvm.StrictLineParser(spec(FIELDS))


@pytest.fixture(scope="module")
def strict_parser(spark):
    return spark._jvm.foodtaster.jvm.StrictLineParser(spec(FIELDS, strict=True))


LINE_NAMES = [".".join(f["path"]) for f in LINE_FIELDS]


def test_a_good_nested_message_gives_every_slot_in_one_parse(parser):
    problems, slots, unexpected = run(parser, GOOD)
    assert problems is None and unexpected is None
    assert slots["data"] == (None, OK, None)
    assert slots["data.customer"] == (None, OK, None)
    assert slots["data.customer.email"] == ("a@b.c", OK, None)
    assert slots["data.customer.address.city"] == ("Oslo", OK, None)
    assert slots["data.total"] == (Decimal("12.50"), OK, None)
    assert slots["data.day"] == ("2024-02-29", OK, None)
    assert slots["flag"] == (True, OK, None)
    lines, status, text = slots["data.lines"]
    assert (status, text, len(lines)) == (OK, None, 1)
    line_status, line_text, line = element(lines[0], LINE_NAMES)
    assert (line_status, line_text) == (OK, None)
    assert line["sku"] == ("A", OK, None)
    assert line["qty"] == (2, OK, None)
    assert line["price"] == (Decimal("1.50"), OK, None)
    assert line["tags"] == ([[OK, None, "x"], [OK, None, "y"]], OK, None)
    assert line["dims"] == (None, OK, None) and line["dims.w"] == (0.5, OK, None)
    assert line["parts"] == ([[OK, None, 1, OK, None]], OK, None)
    assert slots["data.scores"] == ([[OK, None, 1], [OK, None, 2]], OK, None)
    assert slots["data.amounts"] == ([[OK, None, Decimal("1.5")]], OK, None)
    assert slots["data.days"] == ([[OK, None, "2026-01-31"]], OK, None)


@pytest.mark.parametrize(("data", "status", "text", "under"), [
    (None, MISSING, None, MISSING),
    ("null", NULL, None, NULL),
    ("5", FOUND["integer"], "5", UNJUDGED),
    ('[{"customer": {}}]', FOUND["array"], '[{"customer": {}}]', UNJUDGED),
])
def test_an_object_that_is_missing_null_or_no_object_decides_every_slot_under_it(parser, data, status, text,
                                                                                 under):
    line = b'{"id": "m-1"' + (b"" if data is None else b', "data": ' + data.encode()) + b', "flag": false}'
    problems, slots, _ = run(parser, line)
    assert problems is None
    assert slots["data"] == (None, status, text)
    assert {name: slots[name] for name in UNDER_DATA} == {name: (None, under, None) for name in UNDER_DATA}
    assert slots["id"] == ("m-1", OK, None) and slots["flag"] == (False, OK, None)


@pytest.mark.parametrize(("customer", "status", "under"), [
    (None, MISSING, MISSING), ("null", NULL, NULL), ('"a@b.c"', FOUND["string"], UNJUDGED),
])
def test_a_parent_at_depth_two_decides_its_own_slots_only(parser, customer, status, under):
    data = b'{"total": 1' + (b"" if customer is None else b', "customer": ' + customer.encode()) + b"}"
    _, slots, _ = run(parser, b'{"data": ' + data + b"}")
    assert slots["data.customer"][1] == status
    assert {name: slots[name][1] for name in UNDER_CUSTOMER} == dict.fromkeys(UNDER_CUSTOMER, under)
    assert slots["data.total"] == (Decimal("1.00"), OK, None)
    assert slots["data.day"] == (None, MISSING, None)


def test_depth_three_values_are_judged_like_root_ones(parser):
    customer = {"email": 7, "address": {"city": None}}
    _, slots, _ = run(parser, with_data(customer=customer))
    assert slots["data.customer.email"] == (None, FOUND["integer"], "7")
    assert slots["data.customer.address"] == (None, OK, None)
    assert slots["data.customer.address.city"] == (None, NULL, None)


def test_each_element_of_an_array_of_objects_is_judged_on_its_own(parser):
    lines = [{"sku": "A", "qty": 1}, None, 7, {"sku": None, "qty": "2"}, {}, ["x"]]
    _, slots, _ = run(parser, with_data(lines=lines))
    values, status, _ = slots["data.lines"]
    assert status == OK and len(values) == 6
    elements = [element(e, LINE_NAMES) for e in values]
    first = elements[0][2]
    assert elements[0][:2] == (OK, None)
    assert (first["sku"], first["qty"]) == (("A", OK, None), (1, OK, None))
    assert first["price"] == (None, MISSING, None)
    assert first["tags"] == first["parts"] == first["dims"] == first["dims.w"] == (None, MISSING, None)
    # a null element and one of a wrong type: no slot judged, none even missing
    assert elements[1][:2] == (NULL, None) and set(elements[1][2].values()) == {(None, None, None)}
    assert elements[2][:2] == (FOUND["integer"], "7") and set(elements[2][2].values()) == {(None, None, None)}
    assert elements[5][:2] == (FOUND["array"], '["x"]')
    fourth = elements[3][2]
    assert fourth["sku"] == (None, NULL, None) and fourth["qty"] == (None, FOUND["string"], '"2"')
    assert set(elements[4][2].values()) == {(None, MISSING, None)}


@pytest.mark.parametrize(("lines", "status", "text"), [
    (None, MISSING, None), ("null", NULL, None), ('{"sku": "A"}', FOUND["object"], '{"sku": "A"}'),
    ('"A"', FOUND["string"], '"A"'), ("[]", OK, None),
])
def test_an_array_slot_is_missing_null_a_wrong_type_or_a_list(parser, lines, status, text):
    data = b'{"total": 1' + (b"" if lines is None else b', "lines": ' + lines.encode()) + b"}"
    _, slots, _ = run(parser, b'{"data": ' + data + b"}")
    assert slots["data.lines"] == ([] if status == OK else None, status, text)


def test_an_array_inside_an_element_and_an_object_inside_an_element(parser):
    lines = [{"tags": ["a", None, 3]}, {"tags": None, "dims": None}, {"tags": "a", "dims": 3},
             {"tags": [], "dims": {"w": "1"}, "parts": [{"n": 2}, None, {"n": 1.5}]}]
    _, slots, _ = run(parser, with_data(lines=lines))
    elements = [element(e, LINE_NAMES)[2] for e in slots["data.lines"][0]]
    tags = [[OK, None, "a"], [NULL, None, None], [FOUND["integer"], "3", None]]
    assert elements[0]["tags"] == (tags, OK, None)
    assert elements[1]["tags"] == (None, NULL, None)
    assert elements[1]["dims"] == elements[1]["dims.w"] == (None, NULL, None)
    assert elements[2]["tags"] == (None, FOUND["string"], '"a"')
    assert elements[2]["dims"] == (None, FOUND["integer"], "3")
    assert elements[2]["dims.w"] == (None, UNJUDGED, None)
    assert elements[3]["tags"] == ([], OK, None)
    assert elements[3]["dims.w"] == (None, FOUND["string"], '"1"')
    assert elements[3]["parts"] == ([[OK, None, 2, OK, None], [NULL, None, None, None, None],
                                     [OK, None, None, FOUND["number"], "1.5"]], OK, None)


@pytest.mark.parametrize(("json_text", "element"), [
    (b"7", [OK, None, 7]), (b"null", [NULL, None, None]), (b'"7"', [FOUND["string"], '"7"', None]),
    (b"2.5", [FOUND["number"], "2.5", None]),
    (b"99999999999999999999", [OUT_OF_RANGE, "99999999999999999999", None]),
    (b'{"a": 1}', [FOUND["object"], '{"a": 1}', None]),
])
def test_an_array_of_scalars_types_each_element(parser, json_text, element):
    _, slots, _ = run(parser, b'{"data": {"scores": [1, ' + json_text + b"]}}")
    assert slots["data.scores"] == ([[OK, None, 1], element], OK, None)


@pytest.mark.parametrize(("json_text", "value", "status"), [
    (b"1.5", Decimal("1.50"), OK),
    (b"1.500", Decimal("1.50"), OK),  # trailing zeros are no digits it lacks
    (b"1e2", Decimal("100.00"), OK),
    (b"-0.0", Decimal("0.00"), OK),
    (b"12345678", Decimal("12345678.00"), OK),
    (b"99999999.99", Decimal("99999999.99"), OK),
    (b"2.5E-1", Decimal("0.25"), OK),
    (b"1.234", None, OUT_OF_RANGE),  # a fraction digit more than the scale: never rounded
    (b"123456789", None, OUT_OF_RANGE),  # an integer digit more than precision - scale
    (b"1e8", None, OUT_OF_RANGE),
    (b"1e-3", None, OUT_OF_RANGE),
    (b"1e999999999999", None, OUT_OF_RANGE),  # beyond what a BigDecimal's exponent holds
])
def test_a_decimal_fits_its_precision_and_scale_or_is_out_of_range(parser, json_text, value, status):
    _, slots, _ = run(parser, b'{"data": {"total": ' + json_text + b"}}")
    assert slots["data.total"] == (value, status, None if status == OK else json_text.decode())


@pytest.mark.parametrize(("json_text", "found"), [
    (b'"1.5"', "string"), (b"true", "boolean"), (b"[1]", "array"),
])
def test_a_decimal_takes_only_a_json_number(parser, json_text, found):
    _, slots, _ = run(parser, b'{"data": {"total": ' + json_text + b"}}")
    assert slots["data.total"] == (None, FOUND[found], json_text.decode())


def test_a_decimal_array_element_fits_its_own_precision(parser):
    _, slots, _ = run(parser, b'{"data": {"amounts": [9999.9, 10000, 0.25, "1"]}}')
    assert slots["data.amounts"][0] == [[OK, None, Decimal("9999.9")], [OUT_OF_RANGE, "10000", None],
                                        [OUT_OF_RANGE, "0.25", None], [FOUND["string"], '"1"', None]]


@pytest.mark.parametrize(("json_text", "status"), [
    (b'"2026-01-31"', OK), (b'"2024-02-29"', OK), (b'"2000-02-29"', OK), (b'"0001-01-01"', OK),
    (b'"9999-12-31"', OK), (b'"2026-01-3\\u0031"', OK),  # an escape is read as the character it names
    (b'"2026-02-30"', INVALID), (b'"1900-02-29"', INVALID), (b'"2026-1-01"', INVALID),
    (b'"2026-13-01"', INVALID), (b'"0000-01-01"', INVALID), (b'"2026-01-01T00:00:00Z"', INVALID),
    (b'"2026/01/01"', INVALID), (b'""', INVALID), (b'"+2026-01-1"', INVALID),
])
def test_a_date_is_a_real_yyyy_mm_dd_day(parser, json_text, status):
    _, slots, _ = run(parser, b'{"data": {"day": ' + json_text + b"}}")
    if status == OK:
        assert slots["data.day"] == (json.loads(json_text), OK, None)
    else:
        assert slots["data.day"] == (None, INVALID, json_text.decode())


@pytest.mark.parametrize(("json_text", "found"), [
    (b"20260101", "integer"), (b"2026.1", "number"), (b"{}", "object"),
])
def test_a_date_takes_only_a_json_string(parser, json_text, found):
    line = b'{"data": {"day": ' + json_text + b', "days": [' + json_text + b', "2026-02-30"]}}'
    _, slots, _ = run(parser, line)
    text = json_text.decode()
    assert slots["data.day"] == (None, FOUND[found], text)
    assert slots["data.days"][0] == [[FOUND[found], text, None], [INVALID, '"2026-02-30"', None]]


STRICT_LINE = (
    b'{"id": {"not": "reported"}, "extra": 1, "data": {"customer": {"nick": "x", "email": "e",'
    b' "address": {"zip": 1}}, "lines": [{"sku": "a"}, null, {"sku": "c", "colour": "red", "more": {"x": 1},'
    b' "dims": {"w": 1, "h": 2}, "parts": [{"n": 1}, {"n": 2, "m": 3}], "tags": [{"t": 1}]}],'
    b' "zz": {"deep": 1}, "scores": [{"s": 1}]}, "flag": true, "last": [{"a": 1}]}'
)


def test_a_strict_message_names_each_unexpected_key_by_its_full_path_in_document_order(strict_parser):
    problems, slots, unexpected = run(strict_parser, STRICT_LINE)
    assert problems is None
    assert unexpected == [
        "extra", "data.customer.nick", "data.customer.address.zip", "data.lines[2].colour",
        "data.lines[2].more", "data.lines[2].dims.h", "data.lines[2].parts[1].m", "data.zz", "last"]
    assert slots["flag"] == (True, OK, None)  # unexpected keys decide no slot
    assert slots["id"] == (None, FOUND["object"], '{"not": "reported"}')


def test_a_key_holding_a_dot_or_a_bracket_is_named_quoted_with_its_pattern(strict_parser):
    """The parser prints a path as `foodtaster.contract.path.Path` does, so `a.b` the key is
    never `a.b` the path; each unexpected key comes with its pattern (every index `[]`)."""
    line = b'{"a.b": 1, "data": {"x[1]": 2, "lines": [{"sku": "a"}, {"sku": "b", "c.d": {"\\"": 1}}]}}'
    out = plain(strict_parser.parse(bytearray(line)))
    found = [tuple(pair) for pair in out[-2]]
    assert found == [('["a.b"]', '["a.b"]'), ('data["x[1]"]', 'data["x[1]"]'),
                     ('data.lines[1]["c.d"]', 'data.lines[]["c.d"]')]
    assert [str(Path.parse(path)) for path, _ in found] == [path for path, _ in found]
    assert Path.parse(found[2][0]).pattern == Path.parse(found[2][1])


def test_element_scopes_are_strict_even_when_the_message_is_not(parser):
    _, _, unexpected = run(parser, STRICT_LINE)
    assert unexpected == ["data.lines[2].colour", "data.lines[2].more", "data.lines[2].dims.h",
                          "data.lines[2].parts[1].m"]


def test_nothing_unexpected_is_null(strict_parser):
    assert run(strict_parser, GOOD)[2] is None
    assert run(strict_parser, b'{"extra": [1,]}')[2] is None  # a line that is no message keeps nothing


def test_a_strict_scope_still_checks_the_syntax_of_what_it_does_not_name(strict_parser):
    problems, slots, unexpected = run(strict_parser, b'{"data": {"lines": [{"colour": {"a": 1, "a": 2}}]}}')
    assert [rule for _, rule, _ in problems] == ["json.invalid"] and "duplicate key 'a'" in problems[0][2]
    assert unexpected is None and set(slots.values()) == {(None, None, None)}


def test_an_element_scope_alone_strict(spark):
    items = {"type": "object", "strict": True, "fields": [slot("a", "integer")]}
    fields = [slot("items", "array", items=items)]
    parser = spark._jvm.foodtaster.jvm.StrictLineParser(spec(fields))
    _, slots, unexpected = run(parser, b'{"x": 1, "items": [{"a": 1, "b": 2}, {"c": 3}]}', names=["items"])
    assert unexpected == ["items[0].b", "items[1].c"]
    assert slots["items"][0] == [[OK, None, 1, OK, None], [OK, None, None, MISSING, None]]


def test_a_keeping_scope_keeps_each_unknown_key_with_its_json_text_and_filter_drops_it(spark):
    """pandera's Config.strict: False keeps what the contract does not name, "filter" drops it."""
    items = {"type": "object", "strict": False, "fields": [slot("a", "integer")]}
    fields = [slot("m", "object"), slot("m.k", "string"), slot("items", "array", items=items)]
    line = b'{"x": {"deep": [1, {"b": null}]}, "m": {"k": "v", "j": "t\\"q"}, "items": [{"a": 1, "b": 2.50}]}'
    names = ["m", "m.k", "items"]
    kept = plain(spark._jvm.foodtaster.jvm.StrictLineParser(spec(fields)).parse(bytearray(line)))
    assert kept[-2] is None
    assert kept[-1] == [["x", '{"deep": [1, {"b": null}]}'], ["m.j", '"t\\"q"'], ["items[0].b", "2.50"]]
    filtered = {**json.loads(spec(fields)), "strict": "filter",
                "fields": [*fields[:2], slot("items", "array", items={**items, "strict": "filter"})]}
    dropped = plain(spark._jvm.foodtaster.jvm.StrictLineParser(json.dumps(filtered)).parse(bytearray(line)))
    assert dropped[-1] is None and dropped[-2] is None
    assert triples(dropped, names, 1) == triples(kept, names, 1)


def test_a_key_longer_than_jackson_reads_is_invalid_json_not_too_deep(parser):
    problems, _, _ = run(parser, b'{"' + b"k" * 60_000 + b'": 1}')
    assert [rule for _, rule, _ in problems] == ["json.invalid"] and "Name length" in problems[0][2]


@pytest.mark.parametrize(("fields", "words"), [
    ([slot("a.b", "string")], "field a.b needs its parent a listed before it as an object field"),
    ([slot("a.b", "string"), slot("a", "object")], "field a.b needs its parent a"),
    ([slot("a", "string"), slot("a.b", "string")], "field a.b needs its parent a"),
    ([slot("a", "array", items={"type": "string"}), slot("a.b", "string")], "field a.b needs its parent a"),
    ([slot("a", "object"), slot("a.b", "string"), slot("a.b", "number")], "field twice: a.b"),
    # a key holding a dot is named as a path prints it, never as two keys
    ([{"path": ["a.b", "c"], "type": "string"}], re.escape('field ["a.b"].c needs its parent ["a.b"]')),
    ([slot("a", "decimal")], "decimal field a needs precision and scale"),
    ([decimal("a", 5, 6)], "0 <= scale <= precision"),
    ([slot("a", "array")], "array field a needs items"),
    ([slot("a", "array", items={"type": "array"})], "objects or scalars, not arrays"),
    ([slot("a", "array", items={"type": "object", "fields": [slot("b.c", "string")]})],
     "field b.c needs its parent"),
    ([slot("a", "string", precision=1)], "is no decimal"),
    ([{"path": [], "type": "string"}], "needs a path"),
])
def test_a_bad_nested_spec_is_refused_by_name(spark, fields, words):
    with pytest.raises(Exception, match=words):
        spark._jvm.foodtaster.jvm.StrictLineParser(spec(fields))


# ---- the UDF's row, through Spark SQL ---------------------------------------------------------

def columns(name: str, value_type) -> list[StructField]:
    return [StructField(name, value_type), StructField(f"{name}__status", IntegerType()),
            StructField(f"{name}__text", StringType())]


def element_struct(*slots: StructField) -> StructType:
    return StructType([StructField("_status", IntegerType()), StructField("_text", StringType()), *slots])


def test_the_udf_returns_the_nested_verdict_as_a_row(spark):
    fields = [
        slot("id", "string"), decimal("amount", 10, 2), slot("day", "date"), slot("meta", "object"),
        slot("meta.k", "integer"), slot("meta.r", "number"), slot("meta.ok", "boolean"),
        slot("lines", "array", items={"type": "object", "strict": True, "fields": [
            slot("sku", "string"), decimal("price", 5, 3),
            slot("tags", "array", items={"type": "string"})]}),
        slot("scores", "array", items={"type": "integer"}),
    ]
    tag = element_struct(StructField("_value", StringType()))
    line = element_struct(*columns("sku", StringType()), *columns("price", DecimalType(5, 3)),
                          *columns("tags", ArrayType(tag)))
    score = element_struct(StructField("_value", LongType()))
    returns = StructType([
        StructField("reasons", REASONS),
        *columns("id", StringType()), *columns("amount", DecimalType(10, 2)), *columns("day", StringType()),
        *columns("meta", StringType()), *columns("meta.k", LongType()), *columns("meta.r", DoubleType()),
        *columns("meta.ok", BooleanType()),
        *columns("lines", ArrayType(line)), *columns("scores", ArrayType(score)),
        StructField("_unexpected", UNEXPECTED_TYPE),
        StructField("_unknown", UNKNOWN_TYPE),
    ])
    spark.udf.registerJavaFunction("test_strict_line_nested", "foodtaster.jvm.StrictLineUdf", returns)
    messages = [
        b'{"id": "m-1", "amount": 1.5, "day": "2026-02-28", "meta": {"k": 3, "r": 0.5, "ok": true},'
        b' "lines": [{"sku": "A", "price": 1.25, "tags": ["x"], "colour": "red"}, null, 4],'
        b' "scores": [1, "2"]}',
        b'{"amount": 1.234, "day": "2026-02-30", "meta": []}',
        b"[1]",
    ]
    frame = spark.createDataFrame([(bytearray(m),) for m in messages], "raw binary")
    call = F.call_function("test_strict_line_nested", F.col("raw"), F.lit(spec(fields, strict=True).encode()))
    first, second, third = [row.v for row in frame.select(call.alias("v")).collect()]

    assert first.reasons is None
    assert (first.id, first.amount, first.day) == ("m-1", Decimal("1.50"), "2026-02-28")
    assert (first.meta, first.meta__status) == (None, OK)
    assert (first["meta.k"], first["meta.r"], first["meta.ok"]) == (3, 0.5, True)
    assert first.lines__status == OK
    no_slots = dict.fromkeys(["sku", "sku__status", "sku__text", "price", "price__status", "price__text",
                              "tags", "tags__status", "tags__text"])
    assert first.lines == [
        Row(_status=OK, _text=None, sku="A", sku__status=OK, sku__text=None, price=Decimal("1.250"),
            price__status=OK, price__text=None, tags=[Row(_status=OK, _text=None, _value="x")],
            tags__status=OK, tags__text=None),
        Row(_status=NULL, _text=None, **no_slots),
        Row(_status=FOUND["integer"], _text="4", **no_slots),
    ]
    assert first.scores == [Row(_status=OK, _text=None, _value=1),
                            Row(_status=FOUND["string"], _text='"2"', _value=None)]
    assert first._unexpected == [Row(path="lines[0].colour", pattern="lines[].colour")]

    assert (second.amount, second.amount__status, second.amount__text) == (None, OUT_OF_RANGE, "1.234")
    assert (second.day, second.day__status, second.day__text) == (None, INVALID, '"2026-02-30"')
    assert (second.meta__status, second.meta__text) == (FOUND["array"], "[]")
    assert [second[f"meta.{k}__status"] for k in ("k", "r", "ok")] == [UNJUDGED] * 3
    assert (second.id__status, second.lines__status, second.lines) == (MISSING, MISSING, None)
    assert second._unexpected is None

    assert [(r.layer, r.rule) for r in third.reasons] == [("parse", "json.not_object")]
    assert third.id__status is None and third._unexpected is None


def test_a_judged_array_gives_its_verdict_and_its_written_elements_as_a_row(spark):
    """An array whose items say `judge`: one boolean a message (every element passes its slots'
    presence, null, type and rules), the elements as valid/ holds them, and the elements with
    their statuses only where one fails (docs/decisions/025-element-rules-judged-in-the-parser.md)."""
    rules = {"required": True, "nullable": False}
    fields = [
        slot("lines", "array", items={"type": "object", "strict": False, "judge": True, "fields": [
            slot("sku", "string", **rules, checks=[
                {"check": "regex", "pattern": "(?dU)^(?:S-[0-9]+)"},
                {"check": "length", "min": 1, "max": 6}]),
            slot("qty", "integer", **rules, checks=[
                {"check": "compare", "op": ">=", "bound": "1", "exact": True},
                {"check": "compare", "op": "<", "bound": "9.5", "exact": False}]),
            decimal("price", 5, 2) | {"required": False, "nullable": True, "checks": [
                {"check": "compare", "op": ">", "bound": "0", "exact": True}]},
        ]}),
        slot("tags", "array", items={"type": "string", "judge": True, "nullable": False, "checks": [
            {"check": "in", "values": ["a", "b"], "negate": False}, {"check": "suffix", "text": "a"}]}),
    ]
    line = StructType([StructField("sku", StringType()), StructField("qty", LongType()),
                       StructField("price", DecimalType(5, 2))])
    returns = StructType([
        StructField("reasons", REASONS),
        *columns("lines", ArrayType(element_struct(*columns("sku", StringType()), *columns("qty", LongType()),
                                                   *columns("price", DecimalType(5, 2))))),
        *columns("tags", ArrayType(element_struct(StructField("_value", StringType())))),
        StructField("_unexpected", UNEXPECTED_TYPE), StructField("_unknown", UNKNOWN_TYPE),
        StructField("lines__passed", BooleanType()), StructField("lines__written", ArrayType(line)),
        StructField("tags__passed", BooleanType()), StructField("tags__written", ArrayType(StringType())),
    ])
    spark.udf.registerJavaFunction("test_strict_line_judged", "foodtaster.jvm.StrictLineUdf", returns)
    messages = [
        b'{"lines": [{"sku": "S-1", "qty": 9, "price": 0.5}, {"sku": "S-22", "qty": 1, "price": null}],'
        b' "tags": ["a"]}',
        b'{"lines": [{"sku": "S-1", "qty": 10}], "tags": ["b"]}',  # qty not below 9.5; b not ending in a
        b'{"lines": [{"sku": "X-1", "qty": 1}, null], "tags": []}',
        b'{"lines": [{"sku": "S-1234567", "qty": 1}]}',  # 9 characters: too long
        b'{"lines": [{"qty": 1}, {"sku": "S-1", "qty": 1, "price": 0}], "tags": [null]}',
        b'{"lines": 3}',
    ]
    frame = spark.createDataFrame([(bytearray(m),) for m in messages], "raw binary")
    call = F.call_function("test_strict_line_judged", F.col("raw"), F.lit(spec(fields).encode()))
    rows = [row.v for row in frame.select(call.alias("v")).collect()]

    assert [(r.lines__passed, r.tags__passed) for r in rows] == [
        (True, True), (False, False), (False, True), (False, None), (False, False), (None, None)]
    assert rows[0].lines__written == [Row(sku="S-1", qty=9, price=Decimal("0.50")),
                                      Row(sku="S-22", qty=1, price=None)]
    assert rows[0].tags__written == ["a"] and rows[0].lines is None and rows[0].tags is None
    assert rows[2].lines__written == [Row(sku="X-1", qty=1, price=None), None]
    assert rows[2].lines[1]._status == NULL and rows[2].tags__written == []
    assert [e.sku__status for e in rows[4].lines] == [MISSING, OK] and rows[4].tags__written == [None]
    assert (rows[5].lines__status, rows[5].lines__written) == (FOUND["integer"], None)
