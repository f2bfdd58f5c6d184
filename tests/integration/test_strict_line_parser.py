"""Unit tests of the Java parser (`jvm/src/foodtaster/jvm/StrictLineParser.java`), called through
Py4J in the tests' own JVM: one line in, its reasons and each field's value and status out."""

from __future__ import annotations

import json

import pytest

from foodtaster.engine.judging.layers import FieldStatus

SPEC = json.dumps({"max_bytes": 4096, "value_chars": 200, "fields": [
    {"path": [name], "type": json_type}
    for name, json_type in [("s", "string"), ("n", "number"), ("i", "integer"), ("b", "boolean")]]})
WRONG = FieldStatus.WRONG_TYPE
FOUND = {"string": WRONG + 0, "integer": WRONG + 1, "number": WRONG + 2, "boolean": WRONG + 3,
         "object": WRONG + 4, "array": WRONG + 5}
GOOD = b'{"s": "x", "n": 1.5, "i": 2, "b": true}'


@pytest.fixture(scope="module")
def parser(spark):
    return spark._jvm.foodtaster.jvm.StrictLineParser(SPEC)


def run(parser, line: bytes) -> tuple[list[tuple[str, str, str]] | None, dict[str, tuple]]:
    """(the line's reasons as (layer, rule, message), {field: (value, status, text)})."""
    out = list(parser.parse(bytearray(line)))
    assert len(out) == 1 + 3 * 4 + 2 and out[-2] is None  # no scope is strict: no key is unexpected
    problems = None if out[0] is None else [(p[0], p[1], p[3]) for p in out[0]]
    fields = {name: tuple(out[1 + 3 * k: 4 + 3 * k]) for k, name in enumerate("snib")}
    return problems, fields


def rules_of(parser, line: bytes) -> list[str]:
    problems, _ = run(parser, line)
    return [rule for _, rule, _ in problems or []]


def test_a_good_line_gives_each_field_typed(parser):
    problems, fields = run(parser, GOOD)
    assert problems is None
    assert fields == {"s": ("x", 0, None), "n": (1.5, 0, None), "i": (2, 0, None), "b": (True, 0, None)}


def test_missing_null_and_wrong_type_are_told_apart(parser):
    _, fields = run(parser, b'{"s": 5, "n": null, "i": "2"}')
    assert fields["s"] == (None, FOUND["integer"], "5")
    assert fields["n"] == (None, FieldStatus.NULL, None)
    assert fields["i"] == (None, FOUND["string"], '"2"')
    assert fields["b"] == (None, FieldStatus.MISSING, None)


@pytest.mark.parametrize(("json", "found"), [
    (b"2.0", "number"), (b"1E2", "number"), (b"1e2", "number"), (b"-0.0", "number"),
    (b'{"a": [1]}', "object"), (b"[1, 2]", "array"), (b"false", "boolean"),
])
def test_an_integer_field_takes_only_an_integer_literal(parser, json, found):
    _, fields = run(parser, b'{"i": ' + json + b"}")
    assert fields["i"] == (None, FOUND[found], json.decode())


@pytest.mark.parametrize(("json", "value"), [
    (b"7", 7.0), (b"-0", 0.0), (b"1E2", 100.0), (b"12345678901234567890", 1.2345678901234567e19),
    (b"1e308", 1e308), (b"4.9e-324", 5e-324), (b"0.000", 0.0), (b"0e5", 0.0),
])
def test_a_number_field_takes_any_json_number_a_double_holds(parser, json, value):
    _, fields = run(parser, b'{"n": ' + json + b"}")
    assert fields["n"] == (value, FieldStatus.OK, None)


@pytest.mark.parametrize("json", [
    b"1e400", b"-1e400", b"1e-400", b"-2.5E-999", b"1" + b"0" * 400, b"0." + b"0" * 400 + b"1",
])
def test_a_number_no_double_holds_is_out_of_range_never_infinity_or_zero(parser, json):
    _, fields = run(parser, b'{"n": ' + json + b"}")
    assert fields["n"] == (None, FieldStatus.OUT_OF_RANGE, json.decode()[:200])


@pytest.mark.parametrize(("json", "status"), [
    (b"9223372036854775807", FieldStatus.OK), (b"-9223372036854775808", FieldStatus.OK),
    (b"9223372036854775808", FieldStatus.OUT_OF_RANGE), (b"-9223372036854775809", FieldStatus.OUT_OF_RANGE),
    (b"1" * 25, FieldStatus.OUT_OF_RANGE), (b"9" * 4000, FieldStatus.OUT_OF_RANGE),
])
def test_an_integer_beyond_64_bits_is_out_of_range(parser, json, status):
    _, fields = run(parser, b'{"i": ' + json + b"}")
    assert fields["i"][1] == status
    if status == FieldStatus.OK:
        assert fields["i"][0] == int(json)


@pytest.mark.parametrize(("line", "rule", "words"), [
    (b"", "line.empty", "empty line"),
    (b" \t ", "line.empty", "empty line"),
    (b'{"s": "\xff"}', "line.not_utf8", "byte 0xFF at column 8"),
    (b'{"s": "\xc0\xaf"}', "line.not_utf8", "byte 0xC0"),  # overlong '/'
    (b'{"s": "\xed\xa0\x80"}', "line.not_utf8", "byte 0xED"),  # an encoded surrogate
    (b'{"s": "\xf4\x90\x80\x80"}', "line.not_utf8", "byte 0xF4"),  # beyond U+10FFFF
    (b'{"s": "a\x00b"}', "line.nul_byte", "NUL byte at column 9"),
    (b'{"s": "' + b"x" * 5000 + b'"}', "line.too_large", "5009 bytes, over the limit of 4096"),
])
def test_the_bytes_layer(parser, line, rule, words):
    problems, fields = run(parser, line)
    assert [(layer, r) for layer, r, _ in problems] == [("bytes", rule)]
    assert words in problems[0][2]
    assert all(value is None and status is None for value, status, _ in fields.values())


def test_every_bytes_failure_of_a_line_is_listed(parser):
    assert rules_of(parser, b'{"s": "\xff\x00"}' + b" " * 5000) == [
        "line.too_large", "line.not_utf8", "line.nul_byte"]


@pytest.mark.parametrize(("line", "words"), [
    (b"{'s': 'x'}", "single quotes at column 2"),
    (b'{"n": NaN}', "NaN or Infinity"),
    (b'{"n": -Infinity}', "NaN or Infinity"),
    (b'{"s": "x",}', "trailing comma at column 11"),
    (b'{"s": [1,]}', "trailing comma"),
    (b'{"s": "x" /* c */}', "a comment"),
    (b'// c\n{"s": "x"}', "a comment"),
    (b'{"i": 01}', "leading zero"),
    (b'{"s": "x"', "truncated"),
    (b'{"s": "x", "s": "y"}', "duplicate key 's'"),
    (b'{"o": {"a": 1, "a": 2}}', "duplicate key 'a'"),  # nested too
    (b'{"s": "x"} x', "content after the JSON value at column 12"),
    (b'{"s": "x"}{"s": "y"}', "more than one JSON value on the line (the second starts at column 11)"),
    (b'{"s": "x"} {"s": "y"}', "more than one JSON value"),
    (b'{"s": "x"},{"s": "y"}', "content after the JSON value at column 11"),
    (b'{"s": "\\ud800"}', "half of a UTF-16 surrogate pair"),
    (b'{"s": "\\udc00\\ud800"}', "half of a UTF-16 surrogate pair"),
    (b"\xef\xbb\xbf{}", "byte order mark"),
    (b"\r", "no JSON value"),
    (b'{"s": "a\tb"}', "column"),  # a raw control character inside a string
])
def test_the_parse_layer_is_strict_json_and_says_where(parser, line, words):
    problems, _ = run(parser, line)
    assert [(layer, rule) for layer, rule, _ in problems] == [("parse", "json.invalid")]
    assert problems[0][2].startswith("not strict JSON (RFC 8259): ")
    assert words in problems[0][2]


@pytest.mark.parametrize(("line", "column"), [
    (b"[" * 1100 + b"]" * 1100, 1001),
    # brackets in a string do not count
    (b'{"s": "[[[", "x": ' + b"[" * 1100 + b"]" * 1100 + b"}", 18 + 1000),
    (b'{"x": [' + b"[" * 1100, 1006),  # too deep before it is truncated
])
def test_a_message_nested_too_deep_has_its_own_rule(parser, line, column):
    problems, fields = run(parser, line)
    assert problems == [("parse", "json.too_deep", f"nested deeper than 1000 levels at column {column}")]
    assert all(value is None and status is None for value, status, _ in fields.values())


@pytest.mark.parametrize(("line", "got"), [
    (b"[1, 2]", "an array"), (b'"text"', "a string"), (b"42", "an integer"), (b"4.5", "a non-integer number"),
    (b"null", "null"), (b"true", "a boolean"),
])
def test_the_parse_layer_wants_an_object(parser, line, got):
    problems, _ = run(parser, line)
    assert problems == [("parse", "json.not_object", f"a JSON message must be an object, got {got}")]


def test_what_strict_json_allows_passes(parser):
    for line in [b'  {"s": "\\ud83d\\ude00 \\u00e9 \\\\u0000", "extra": {"deep": [1, {"x": null}]}}  ',
                 b'{"s": "\xc3\xa9\xf0\x9f\x98\x80"}', b"{}", b'{"n": 1.5e3, "i": -0, "b": false}']:
        assert run(parser, line)[0] is None, line


def test_a_wrong_value_is_kept_as_its_json_text_cut_to_the_record_length(parser):
    _, fields = run(parser, b'{"i": {"a": [1, 2], "b": "\xc3\xa9"}, "s": ["' + b"y" * 300 + b'"]}')
    assert fields["i"] == (None, FOUND["object"], '{"a": [1, 2], "b": "\u00e9"}')
    assert fields["s"][2] == '["' + "y" * 198


def test_a_bad_spec_is_refused_by_name(spark):
    jvm = spark._jvm.foodtaster.jvm
    def spec_of(*fields: dict) -> str:
        return json.dumps({"max_bytes": 1, "value_chars": 1, "fields": list(fields)})

    for spec, words in [
        ('{"fields": []}', "needs max_bytes"),
        ("max_bytes=1;value_chars=1;fields=a:string", "the spec is not JSON"),
        ('{"max_bytes": 1, "value_chars": 1, "fields": [], "field": []}', "unknown spec key field"),
        (spec_of({"path": ["x"], "type": "time"}), "unknown JSON type time"),
        (spec_of({"path": ["a"], "type": "string"}, {"path": ["a"], "type": "number"}), "field twice: a"),
    ]:
        with pytest.raises(Exception, match=words):
            jvm.StrictLineParser(spec)


def test_the_python_side_reads_the_statuses_as_java_numbers_them(spark):
    jvm = spark._jvm.foodtaster.jvm.StrictLineParser
    assert {s.name: int(s) for s in FieldStatus} == {s.name: getattr(jvm, s.name) for s in FieldStatus}
    assert (jvm.OK, jvm.MISSING, jvm.NULL, jvm.OUT_OF_RANGE, jvm.INVALID, jvm.UNJUDGED, jvm.WRONG_TYPE) == (
        0, 1, 2, 3, 4, 5, 10)
    from foodtaster.engine.judging.layers import FOUND_TYPES

    assert [f"{w}" for w in jvm.FOUND] == [w.split(" ")[-1] for w in FOUND_TYPES]


def test_a_parser_jar_that_was_not_built_is_a_clear_error(monkeypatch, tmp_path):
    from foodtaster.engine.spark import parser_jar

    monkeypatch.setenv("FOODTASTER_JVM_JAR", str(tmp_path / "missing.jar"))
    with pytest.raises(RuntimeError, match=r"was not built: run `make jar`.*openjdk-17-jdk-headless"):
        parser_jar()


def test_the_tests_session_has_the_parser_on_spark_jars(spark):
    from foodtaster.engine.spark import parser_jar

    assert parser_jar() in spark.conf.get("spark.jars")
