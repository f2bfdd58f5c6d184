"""The contract layer on tiny DataFrames: strict JSON types, every failing rule listed."""

import json

import pytest
from support.frames import lines_frame

from contracts.orders import Orders
from foodtaster.contract import read_contract
from foodtaster.engine.judging.judging import validate_lines

CONTRACT = read_contract(Orders)
GOOD = {"message_id": "m-1", "order_id": "o", "customer_id": "c", "amount": 12.5, "currency": "USD",
        "status": "PAID", "created_at": "2026-11-20T10:00:00+02:00", "items": 2}


def verdicts(spark, messages):
    lines = [m if isinstance(m, bytes) else json.dumps(m).encode() for m in messages]
    rows = validate_lines(lines_frame(spark, lines), CONTRACT, 1 << 20).orderBy("_row_id").collect()
    return [{r.rule for r in row["_reasons"]} for row in rows], rows


def test_strict_types_missing_null_and_wrong_type_are_different_reasons(spark):
    got, _ = verdicts(spark, [
        GOOD,
        {**GOOD, "amount": "12.5"},
        {**GOOD, "items": 2.0},
        {**GOOD, "items": 1e3},
        {k: v for k, v in GOOD.items() if k != "amount"},
        {**GOOD, "amount": None},
        {**GOOD, "amount": True},
        {**GOOD, "amount": 7},  # an integer is a JSON number
        {**GOOD, "producer": None, "extra": {"x": [1]}},  # optional field null, extra field kept
    ])
    paid = "amount.greater_than(0).when(status in (PAID,SHIPPED,DELIVERED))"
    assert got == [
        set(), {"amount.type(number)", paid}, {"items.type(integer)"}, {"items.type(integer)"},
        {"amount.required", paid}, {"amount.not_nullable", paid}, {"amount.type(number)", paid}, set(), set(),
    ]


def test_every_failing_rule_of_a_row_is_listed_with_column_and_value(spark):
    bad = {**GOOD, "message_id": "m 1", "order_id": "", "amount": -3, "currency": "XYZ",
           "status": "LOST", "created_at": "2026-02-30T10:00:00Z", "items": 0}
    got, rows = verdicts(spark, [bad])
    assert got[0] == {
        "message_id.str_matches", "order_id.str_length(1)", "amount.greater_than_or_equal_to(0)",
        "currency.isin", "status.isin", "created_at.iso_timestamp", "items.greater_than_or_equal_to(1)",
    }
    by_rule = {r.rule: r for r in rows[0]["_reasons"]}
    assert by_rule["currency.isin"].column == "currency" and by_rule["currency.isin"].value == "XYZ"
    assert by_rule["amount.greater_than_or_equal_to(0)"].value == "-3.0"
    assert all(r.layer == "contract" and r.message for r in rows[0]["_reasons"])


def test_typed_fields_are_kept_for_quarantined_rows_where_they_parse(spark):
    _, rows = verdicts(spark, [{**GOOD, "currency": "XYZ", "items": "two"}])
    assert rows[0]["amount"] == 12.5 and rows[0]["currency"] == "XYZ" and rows[0]["items"] is None


@pytest.mark.parametrize(
    "value",
    ["2026-11-20T10:00:00Z\r", "2026-11-20T10:00:00", "2026-11-20T10:00:00+24:00",
     "\uff12026-11-20T10:00:00Z"],
)
def test_timestamps_need_a_zone_and_ascii_digits(spark, value):
    got, _ = verdicts(spark, [{**GOOD, "created_at": value}])
    assert got == [{"created_at.iso_timestamp"}]


def test_a_timestamp_passes_only_where_it_is_written_as_one(spark):
    """Offsets stop at ±18:00 and years start at 0001: past them Spark's timestamp is null, or
    pandera's reference has no such date. A passing row's created_at is never written as a null."""
    values = ["2026-11-20T10:00:00+18:00", "2026-11-20T10:00:00-18:00", "2026-11-20T10:00:00+18:01",
              "2026-11-20T10:00:00+20:00", "2026-11-20T10:00:00-23:59", "0000-01-01T00:00:00Z"]
    got, rows = verdicts(spark, [{**GOOD, "created_at": value} for value in values])
    bad = {"created_at.iso_timestamp"}
    assert got == [set(), set(), bad, bad, bad, bad]
    written = [str(r["created_at"]) for r in rows if not r["_reasons"]]
    assert written == ["2026-11-19 16:00:00", "2026-11-21 04:00:00"]
