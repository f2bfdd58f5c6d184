"""The bytes and parse layers on tiny DataFrames: one reason, the right one, per kind of damage."""

import json

import pandera.pandas as pa
import pytest
from pandera.typing import Series
from support.frames import lines_frame

from foodtaster.contract import read_contract
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers, parser_spec

GOOD = b'{"message_id": "m1", "amount": 5}'


class Two(pa.DataFrameModel):
    message_id: Series[str]
    amount: Series[float]


def reasons_of(spark, lines, max_bytes=200):
    parser = parser_spec.parser_input(read_contract(Two), max_bytes)
    parsed = layers.parse(lines_frame(spark, lines), parser)
    rows = parsed.orderBy("_row_id").collect()
    return [[(r.layer, r.rule) for r in row[layers.LINE_REASONS] or []] for row in rows], rows


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (b"", "line.empty"),
        (b"  \t ", "line.empty"),
        (b'{"a": "\xff\xfe"}', "line.not_utf8"),
        (b'{"a": "x\x00y"}', "line.nul_byte"),
        (b'{"a": "' + b"x" * 300 + b'"}', "line.too_large"),
    ],
)
def test_bytes_layer_names_the_damage(spark, line, rule):
    reasons, _ = reasons_of(spark, [line])
    assert reasons == [[("bytes", rule)]]


@pytest.mark.parametrize(
    "line",
    [
        b"{'message_id': 'm1'}",  # single quotes
        b'{"amount": NaN}',
        b'{"amount": Infinity}',
        b'{"a": 1,}',  # trailing comma
        b'{"a": 1 /* c */}',
        b'{"a": 1',  # truncated
        b'{"a": 01}',  # leading zero
        b'{"a": 1, "a": 2}',  # duplicate key
        b'{"a": 1}{"b": 2}',  # two messages glued together
        b'{"a": 1},{"b": 2}',
        b'{"a": 1}],[{"b": 2}',  # would close the parser's wrapper early
        b'{"a": 1} trailing',
    ],
)
def test_parse_layer_rejects_non_strict_json(spark, line):
    reasons, rows = reasons_of(spark, [line])
    assert reasons == [[("parse", "json.invalid")]]
    assert rows[0][layers.value_column(Path.of("message_id"))] is None
    assert rows[0][layers.status_column(Path.of("amount"))] is None
    with pytest.raises(ValueError):  # the reference agrees it is not strict JSON
        json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)),
                   object_pairs_hook=_no_duplicates)


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


@pytest.mark.parametrize("line", [b"[1, 2]", b'"text"', b"42", b"null", b"true"])
def test_parse_layer_wants_an_object(spark, line):
    reasons, _ = reasons_of(spark, [line])
    assert reasons == [[("parse", "json.not_object")]]


def test_good_lines_pass_both_layers_and_keep_the_parse(spark):
    reasons, rows = reasons_of(spark, [GOOD, b'  {"nested": {"a": [1, {"b": "]"}]}}  ', b'{"s": "}]"}'])
    assert reasons == [[], [], []]
    message_id, amount = Path.of("message_id"), Path.of("amount")
    assert (rows[0][layers.value_column(message_id)], rows[0][layers.value_column(amount)]) == ("m1", 5.0)
    statuses = [row[layers.status_column(amount)] for row in rows]
    assert statuses == [layers.FieldStatus.OK] + [layers.FieldStatus.MISSING] * 2


def test_a_bytes_failure_is_not_also_reported_as_a_parse_failure(spark):
    reasons, _ = reasons_of(spark, [b"\xff{not json"])
    assert reasons == [[("bytes", "line.not_utf8")]]


def test_messages_explain_the_syntax_error(spark):
    _, rows = reasons_of(spark, [b"{'a': 1}", b'{"a": 1,}', b'{"a": NaN}', b'{"a": 1}{"b": 2}',
                                 b'{"a": 1, "a": 2}', b'{"a": [1, 2'])
    messages = [row[layers.LINE_REASONS][0]["message"] for row in rows]
    assert "single quotes at column 2" in messages[0]
    assert "trailing comma at column 9" in messages[1]
    assert "NaN" in messages[2]
    assert "more than one JSON value on the line (the second starts at column 9)" in messages[3]
    assert "duplicate key 'a'" in messages[4]
    assert "truncated" in messages[5]


def test_a_line_that_is_not_utf8_names_the_byte_and_keeps_a_readable_value(spark):
    _, rows = reasons_of(spark, [b'{"a": "caf\xc3"}'])
    (reason,) = rows[0][layers.LINE_REASONS]
    assert reason["message"] == "message is not valid UTF-8: byte 0xC3 at column 11 starts no valid character"
    assert reason["value"] == '{"a": "caf\ufffd"}'


def test_a_reason_value_is_cut_to_the_record_length(spark):
    _, rows = reasons_of(spark, [b"{'a': '" + "\u00e9".encode() * 300 + b"'}"], max_bytes=4096)
    (reason,) = rows[0][layers.LINE_REASONS]
    assert len(reason["value"]) == 200


def test_the_parser_runs_once_a_line_in_the_flag_pass(spark):
    """The UDF is opaque to Spark: were its result copied into each field's column, every line
    would be parsed once a field. The optimized plan of the whole flag pass holds one call."""
    from contracts.orders import Orders
    from foodtaster.contract import read_contract
    from foodtaster.engine.judging.judging import flag_lines

    flagged = flag_lines(lines_frame(spark, [GOOD]), read_contract(Orders), 200)
    plan = flagged._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("foodtaster_strict_line_") == 1, plan
