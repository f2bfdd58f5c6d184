"""Differential test: Spark's verdict equals pandera's pandas backend, rule by rule.

Hypothesis generates messages field by field (a valid value, a value of the
right type that breaks a rule, a wrong type, null, or missing) from the
contract itself; each example is a batch that Spark evaluates in one job, and
each message is then judged by `foodtaster_dev.oracle` (pandera, one row) on the
line as written. Numbers at the edge of their type (issue 9) are written as
JSON literals (`Literal`): beyond 64 bits, beyond a double, underflowing to
zero, `1E2` and `10.0` for an integer, long digit strings.
"""

from __future__ import annotations

import itertools
import json
import random
from datetime import UTC, datetime, timedelta

import pandera.pandas as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pandera.typing import Series
from support.frames import lines_frame

import foodtaster.checks  # noqa: F401  registers multiple_of
from contracts.orders import Orders
from foodtaster.contract import read_contract
from foodtaster.contract.model import FieldRule
from foodtaster.engine.judging.judging import validate_lines
from foodtaster_dev.contracts.checked import OrdersChecked
from foodtaster_dev.oracle import decode, failed_rules

CONTRACT = read_contract(Orders)
MISSING = object()


class Literal:
    """A JSON number written exactly as given, where Python's own `json.dumps` could not."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def encode(message: dict) -> bytes:
    """The message as one JSON line, `Literal`s as their text."""
    def value(v):
        return v.text if isinstance(v, Literal) else json.dumps(v, ensure_ascii=False)

    return ("{" + ", ".join(f"{json.dumps(k)}: {value(v)}" for k, v in message.items()) + "}").encode()


# Integers at and beyond the edges of int64, and long digit strings.
EDGE_INTEGERS = [2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**30, int("9" * 400)]
# Numbers at the edges of a double: overflow, underflow to zero, subnormal, huge, exponent forms.
EDGE_NUMBERS = [Literal(t) for t in [
    "1e400", "-1e400", "1E309", "1e-400", "-2.5e-999", "0.0e0", "4.9e-324", "1e308", "1E2", "1e-7",
    "1" + "0" * 400, "0." + "0" * 400 + "1", "123456789012345678901234567890", "1000000.0000000001",
]]
TRICKY_STRINGS = ["", " ", "abc\n", "abc\r", "ab c", "é", "\u0661\u0662", "<script>x</script>", "x" * 70]


def timestamps() -> st.SearchStrategy[str]:
    moments = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1))
    zones = st.sampled_from(["Z", "+00:00", "-05:30", "+14:00", "+18:00", "-18:00", "+18:01", "-19:00",
                             "+23:59", "+24:00", "", "z", "+0530"])
    fraction = st.sampled_from(["", ".1", ".123456", ".1234567"])
    shaped = st.builds(lambda m, f, z: m.strftime("%Y-%m-%dT%H:%M:%S") + f + z, moments, fraction, zones)
    broken = st.sampled_from(
        ["2026-02-30T10:00:00Z", "2026-13-01T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20 10:00:00Z",
         "2026-11-20T10:00:00Z\n", "2026-11-20T10:00:60Z", "yesterday", "\uff12026-11-20T10:00:00Z",
         "0000-01-01T00:00:00Z"]
    )
    return st.one_of(shaped, broken)


def right_type_values(rule: FieldRule) -> st.SearchStrategy:
    kind = rule.json_type.name
    checks = dict(rule.checks)
    if kind == "string":
        options = [st.text(max_size=12), st.sampled_from(TRICKY_STRINGS)]
        if "isin" in checks:
            options.append(st.sampled_from(checks["isin"]["allowed_values"]))
        if "str_matches" in checks:
            options.append(st.from_regex(checks["str_matches"]["pattern"], fullmatch=True))
        if "iso_timestamp" in checks:
            options.append(timestamps())
        return st.one_of(options)
    if kind == "integer":
        return st.one_of(st.integers(-5, 2000), st.integers(), st.sampled_from([0, 1, 1000, 1001]),
                         st.sampled_from(EDGE_INTEGERS))
    if kind == "number":
        return st.one_of(
            st.floats(allow_nan=False, allow_infinity=False, min_value=-10, max_value=2e6),
            st.integers(-10, 2_000_000), st.sampled_from([0, 0.0, -0.0, 1e6, 1000000.5, 1e300]),
            st.sampled_from(EDGE_NUMBERS), st.sampled_from(EDGE_INTEGERS),
        )
    return st.booleans()


def wrong_type_values(rule: FieldRule) -> st.SearchStrategy:
    by_type = {
        "string": st.text(max_size=5),
        "integer": st.integers(-3, 3),
        "number": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
    }
    kind = rule.json_type.name
    wrong = [strategy for name, strategy in by_type.items()
             if name != kind and not (kind == "number" and name == "integer")]
    if kind == "integer":
        edges = st.sampled_from([Literal(t) for t in ["1E2", "10.0", "1e400", "1e-400", "-0.0"]])
        wrong = [st.just(2.0), st.just(1e3), edges] + [s for s in wrong if s is not by_type["number"]]
    text_number = st.just("12.5") if kind != "string" else st.just(5)
    return st.one_of(*wrong, st.just([1]), st.just({"a": 1}), text_number)


def valid_values(rule: FieldRule) -> st.SearchStrategy:
    """Values that pass every rule of the field (drawn from the rules' own statistics)."""
    checks = dict(rule.checks)
    if "isin" in checks:
        return st.sampled_from(checks["isin"]["allowed_values"])
    if "str_matches" in checks:
        return st.from_regex(checks["str_matches"]["pattern"], fullmatch=True)
    if "iso_timestamp" in checks:
        moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1))
        return moments.map(lambda m: m.strftime("%Y-%m-%dT%H:%M:%S") + "Z")
    if rule.json_type.name == "string":
        return st.text(min_size=checks.get("str_length", {}).get("min_value") or 0, max_size=10)
    low = checks.get("greater_than_or_equal_to", {}).get("min_value", -1000)
    high = checks.get("less_than_or_equal_to", {}).get("max_value", 1000)
    if rule.json_type.name == "integer":
        return st.integers(low, high)
    return st.one_of(st.integers(int(low), int(high)), st.floats(low, high))


def field_values(rule: FieldRule) -> st.SearchStrategy:
    return st.one_of(
        right_type_values(rule), right_type_values(rule), right_type_values(rule),
        wrong_type_values(rule), st.just(None), st.just(MISSING),
    )


FIELDS = {rule.name: rule for rule in CONTRACT.fields}


@st.composite
def messages(draw) -> dict:
    """A valid message with up to three fields replaced by anything the field strategies make."""
    message = {name: draw(valid_values(rule)) for name, rule in FIELDS.items()}
    # a list, not a set: a set's order follows the hash seed, and derandomized draws must not
    for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), unique=True, max_size=3)):
        message[name] = draw(field_values(FIELDS[name]))
    return {k: v for k, v in message.items() if v is not MISSING}


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=[Phase.explicit, Phase.generate])  # a failure names its message; no slow shrinking
@given(batch=st.lists(messages(), min_size=60, max_size=80))
def test_spark_and_pandera_agree_rule_by_rule(spark, batch):
    lines = [encode(m) for m in batch]
    rows = validate_lines(lines_frame(spark, lines), CONTRACT, 1 << 20).orderBy("_row_id").collect()
    assert len(rows) == len(batch)
    for line, message, row in zip(lines, batch, rows, strict=True):
        spark_rules = {r.rule for r in row["_reasons"]}
        reference = failed_rules(decode(line), Orders, CONTRACT)
        only = f"spark only {spark_rules - reference}, pandera only {reference - spark_rules}"
        assert spark_rules == reference, f"{message}: {only}"
        if not spark_rules:  # passed: every field it has is written typed, never as a null
            assert all(row[name] is not None for name, value in message.items() if value is not None), message


def test_the_generator_reaches_valid_and_every_kind_of_failure():
    """The differential test is only as good as what it generates: check it covers the rules."""
    seen: set[str] = set()
    verdicts = []

    @settings(max_examples=1500, deadline=None, derandomize=True, database=None)
    @given(message=messages())
    def judge(message):
        failed = failed_rules(decode(encode(message)), Orders, CONTRACT)
        seen.update(failed)
        verdicts.append(not failed)

    judge()
    assert any(verdicts), "no valid message was generated"
    kinds = {rule.split(".", 1)[1].split("(")[0] for rule in seen}
    assert {"type", "required", "not_nullable", "isin", "str_matches", "iso_timestamp",
            "greater_than_or_equal_to", "less_than_or_equal_to", "str_length"} <= kinds
    assert {"amount.type(number)", "items.type(integer)", "amount.out_of_range", "items.out_of_range"} <= seen
    assert any(rule.endswith(".when(status in (PAID,SHIPPED,DELIVERED))") for rule in seen)


def test_a_valid_message_is_valid_on_both_sides(spark):
    now = datetime(2026, 11, 20, tzinfo=UTC) + timedelta(hours=5)
    message = {"message_id": "m-1", "order_id": "o", "customer_id": "c", "amount": 10, "currency": "EUR",
               "status": "PAID", "created_at": now.isoformat().replace("+00:00", "Z"), "items": 1}
    rows = validate_lines(lines_frame(spark, [json.dumps(message).encode()]), CONTRACT, 1 << 20).collect()
    assert rows[0]["_reasons"] == [] and failed_rules(message, Orders, CONTRACT) == set()
    assert rows[0]["created_at"] == now.replace(tzinfo=None)


def test_numbers_at_the_edge_of_their_type_agree_and_never_reach_a_valid_row_as_null_or_infinity(spark):
    """Every edge number, in the number field and the integer field, in one batch (issue 9)."""
    base = {"message_id": "m-1", "order_id": "o", "customer_id": "c", "amount": 10, "currency": "EUR",
            "status": "CREATED", "created_at": "2026-11-20T10:00:00Z", "items": 1}
    edges = [*EDGE_NUMBERS, *EDGE_INTEGERS, Literal("10.0"), Literal("-0")]
    batch = [{**base, field: edge} for field in ("amount", "items") for edge in edges]
    lines = [encode(m) for m in batch]
    rows = validate_lines(lines_frame(spark, lines), CONTRACT, 1 << 20).orderBy("_row_id").collect()
    for line, row in zip(lines, rows, strict=True):
        spark_rules = {r.rule for r in row["_reasons"]}
        assert spark_rules == failed_rules(decode(line), Orders, CONTRACT), line
        if not spark_rules:
            assert row["items"] is not None and row["amount"] is not None
            assert abs(row["amount"]) < float("inf")
    verdicts = [{r.rule for r in row["_reasons"]} for row in rows]
    # 1e400, -1e400, 1E309, three underflows to zero, 1 and 400 zeros, 400 nines
    assert verdicts.count({"amount.out_of_range"}) == 8
    # 2**63, -(2**63)-1, 10**30, 400 nines, 1 and 400 zeros, 30 digits
    assert verdicts.count({"items.out_of_range"}) == 6
    assert {"items.type(integer)"} in verdicts  # 1E2 and 10.0 for an integer


CHECKED = read_contract(OrdersChecked)
# Amounts around the two-decimal rule of OrdersChecked's Python check (`decimal_places`).
CENTS = [10, 10.5, 10.25, 10.255, 0.1 + 0.2, 1e-7, 999999.99, 999999.995, -0.01, 0.0, 1e300,
         Literal("12.50"), Literal("1E-2"), Literal("1e-400"), Literal("1e400"), "10.25", None, True]


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=[Phase.explicit, Phase.generate])
@given(batch=st.lists(messages(), min_size=40, max_size=60),
       amounts=st.lists(st.one_of(st.sampled_from(CENTS), st.floats(0, 1e6), st.integers(0, 10**6)),
                        min_size=40, max_size=40))
def test_spark_and_pandera_agree_on_a_python_check(spark, batch, amounts):
    """A check registered with pandera and run by Spark as a pandas UDF: the same verdict."""
    assert [c.rule for c in CHECKED.python_checks] == ["amount.decimal_places(2)"]
    batch = [{**m, "amount": a} for m, a in zip(batch, itertools.cycle(CENTS + amounts))]
    lines = [encode(m) for m in batch]
    rows = validate_lines(lines_frame(spark, lines), CHECKED, 1 << 20).orderBy("_row_id").collect()
    verdicts = []
    for line, row in zip(lines, rows, strict=True):
        spark_rules = {r.rule for r in row["_reasons"]}
        reference = failed_rules(decode(line), OrdersChecked, CHECKED)
        assert spark_rules == reference, f"{line}: spark only {spark_rules - reference}, pandera only " \
                                         f"{reference - spark_rules}"
        verdicts.append("amount.decimal_places(2)" in spark_rules)
    assert any(verdicts) and not all(verdicts)


class Measured(pa.DataFrameModel):
    """`multiple_of` (JSON Schema's multipleOf) on each type it takes, with an integer and a float
    divisor: Spark's `%` and the pandas check it is registered as must agree."""

    qty: Series[int] = pa.Field(multiple_of=5)
    big: Series[int] = pa.Field(multiple_of=2**40)
    half: Series[float] = pa.Field(multiple_of=0.5)
    cents: Series[float] = pa.Field(multiple_of=0.01)
    fives: Series[float] = pa.Field(multiple_of=5)
    price: Series[pa.Decimal] = pa.Field(multiple_of=5, dtype_kwargs={"precision": 12, "scale": 2})
    share: Series[pa.Decimal] = pa.Field(multiple_of=0.1, dtype_kwargs={"precision": 12, "scale": 2})


MEASURED = read_contract(Measured)
MULTIPLES = [0, 5, -5, 7, 10, 2**40, 3 * 2**40, 2**40 + 1, 2**62, 2**63 - 1, -(2**63), 0.5, 2.5, 0.3, 0.7,
             0.1 + 0.2, 10.01, 1e300, 2.5e-5, 1e-7, 1e15 + 0.5, Literal("-0.0"), Literal("1E2"),
             Literal("12.50"), Literal("10.00"), Literal("0.30"), Literal("1E-2"), Literal("999999999.95"),
             Literal("4.9e-324"), Literal("1e400"), 2**63, "5", None, True]


def test_spark_and_pandera_agree_on_multiple_of_on_every_type(spark):
    base = {"qty": 10, "big": 2**41, "half": 1.5, "cents": 0.25, "fives": 15, "price": 10, "share": 0.5}
    draw = random.Random(44)
    near = [round(draw.uniform(-50, 50), draw.choice([0, 1, 2, 3])) for _ in range(8)]
    values = MULTIPLES + near
    names = list(base)
    # every field takes every value once with the others rotated (pandera judges a message at a
    # time: one message a value, not one a field and value), then once with the others valid
    batch = [{name: values[(i + 5 * k) % len(values)] for k, name in enumerate(names)}
             for i in range(len(values))]
    batch += [{**base, names[i % len(names)]: value} for i, value in enumerate(values)]
    lines = [encode(m) for m in batch]
    rows = validate_lines(lines_frame(spark, lines), MEASURED, 1 << 20).orderBy("_row_id").collect()
    failed = []
    for line, row in zip(lines, rows, strict=True):
        spark_rules = {r.rule for r in row["_reasons"]}
        reference = failed_rules(decode(line), Measured, MEASURED)
        assert spark_rules == reference, f"{line}: spark only {spark_rules - reference}, pandera only " \
                                         f"{reference - spark_rules}"
        failed += [rule for rule in spark_rules if ".multiple_of(" in rule]
    # every field's multiple_of both passes and fails: the test compares verdicts that differ
    assert {rule.split(".")[0] for rule in failed} == set(base)
    assert sum(not row["_reasons"] for row in rows) >= 10
