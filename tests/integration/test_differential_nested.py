"""Differential test of nested messages: Spark's verdict equals pandera's, reason by reason.

As tests/integration/test_differential.py does for flat messages, hypothesis generates
messages from the contract itself: it walks the contract's slots (`read_contract(Model)`,
implied objects included, parents first) and each array's element scope. At every depth a
slot gets a valid value, a value of its JSON type that breaks a rule, a value of another
JSON type, null, or nothing; arrays get 0..4 elements (and one past a length bound), an
element may be null or no object, and objects at every depth get keys the contract does not
name. How much of a message is broken is drawn per message (`RATES`), so a batch holds
valid messages and messages broken in one place or many.

Each example is a batch that Spark evaluates in one job (`validate_lines`); each message is
then judged by `foodtaster_dev.oracle` (pandera on the line as written, one row a scope) and
the two verdicts must be the same set of (rule, column) pairs: an element's reason names its
element by index. A message that passed must be written as it came: decimals as Decimal,
dates as date, objects as structs and arrays as lists of what the contract names.
"""

from __future__ import annotations

import copy
import json
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pandera.pandas as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from support.frames import lines_frame

from contracts.order_events import OrderEvents
from foodtaster.contract import read_contract
from foodtaster.contract.model import Contract, FieldRule, Scope
from foodtaster.contract.path import Path
from foodtaster.engine.judging.judging import validate_lines
from foodtaster.engine.judging.layers import UNKNOWN
from foodtaster.engine.judging.row_checks import message_keys
from foodtaster_dev.contracts.nested import Shipments
from foodtaster_dev.oracle import decode, failed_reasons

ORDER_EVENTS = read_contract(OrderEvents)
SHIPMENTS = read_contract(Shipments)
MISSING = object()
NEW_OBJECT = object()  # an object whose fields are drawn after it, from the slots under it
# How often a slot is broken, in percent, drawn once a message: 0 gives a valid message.
RATES = (0, 4, 10, 20, 40)


class Literal:
    """A JSON number written exactly as given (`1E2`, `1.50`, `-0.0`), where Python's own
    `json.dumps` could not."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def encode(value: Any) -> str:
    """A value as JSON, at any depth, `Literal`s as their text."""
    if isinstance(value, Literal):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(k)}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


# ---- values a slot can take, from its rules -----------------------------------------------

EDGE_INTEGERS = [2**63 - 1, -(2**63), 2**63, 10**30, 0, -1]
EDGE_NUMBERS = [Literal(t) for t in ["1e400", "-1e400", "1e-400", "0.0e0", "4.9e-324", "1E2", "-0.0", "10.0"]]
TRICKY_STRINGS = ["", " ", "abc\n", "é", "\u0661\u0662", "x" * 40, "+", "P001 ", "NEW"]
# Decimals that fit, that have a fraction or integer digit too many, in exponent forms, and
# literals longer than Python's default decimal context (28 digits) or than a double holds.
DECIMAL_EDGES = [Literal(t) for t in [
    "1E2", "1e-2", "1E+1", "1.50", "-0.0", "0", "-1", "0.001", "0.0001", "12.345", "12.3456",
    "99.99", "100", "999.999", "1000", "1" + "0" * 40, "0e-400", "1e400", "1e-400",
    "1." + "0" * 30 + "1", "0." + "0" * 30 + "1", "2.5E-1", "-0", "5e1",
]]
DATE_EDGES = ["2026-02-30", "2024-02-29", "2025-02-29", "2026-1-01", "2026-01-1", "2026-13-01",
              "2026-01-01T00:00:00", "0000-01-01", "0001-01-01", "9999-12-31", " 2026-01-01",
              "\uff12\uff10\uff12\uff16-01-01", "", "+2026-01-01", "20260101"]
TIMESTAMPS = ["2026-11-20T10:00:00Z", "2026-11-20T10:00:00.123456+18:00", "2026-11-20T10:00:00+18:01",
              "2026-11-20T10:00:00", "2026-02-30T10:00:00Z", "2026-11-20 10:00:00Z", "yesterday"]
# Keys the contracts do not name: at any depth; `Data` differs from `data` by case only.
UNKNOWN_KEYS = ["extra", "Data", "zz"]
UNKNOWN_VALUES = [1, "x", None, True, {"k": [1, None]}, [{"a": 1}], Literal("1E2")]
# What a value of each JSON type looks like, where another type is wanted.
OTHER_TYPES = {
    "string": ["x", "", "12.5", "2026-01-01"],
    "integer": [0, 7, -3],
    "number": [Literal("2.5"), Literal("1E2"), Literal("-0.0"), Literal("10.0")],
    "boolean": [True, False],
    "object": [{}, {"a": 1}, {"value": 1}],
    "array": [[], [1], [{"a": None}]],
}
# The JSON types each slot type takes.
TAKES = {"string": {"string"}, "date": {"string"}, "integer": {"integer"}, "boolean": {"boolean"},
         "number": {"integer", "number"}, "decimal": {"integer", "number"}, "object": {"object"},
         "array": {"array"}}


def bounds(rule: FieldRule, low: float, high: float) -> tuple[float, float, bool, bool]:
    """(low, high, low excluded, high excluded) from the rule's comparisons, else the defaults."""
    open_low = open_high = False
    for name, s in rule.checks:
        if name == "greater_than_or_equal_to":
            low = s["min_value"]
        elif name == "greater_than":
            low, open_low = s["min_value"], True
        elif name == "less_than_or_equal_to":
            high = s["max_value"]
        elif name == "less_than":
            high, open_high = s["max_value"], True
        elif name == "in_range":
            low, high = s["min_value"], s["max_value"]
            open_low, open_high = not s["include_min"], not s["include_max"]
    return low, high, open_low, open_high


def decimal_shape(rule: FieldRule) -> tuple[int, int]:
    precision, scale = rule.json_type.precision, rule.json_type.scale
    assert precision is not None and scale is not None
    return precision, scale


def valid_core(rule: FieldRule) -> st.SearchStrategy:
    """A present value that passes every rule of a scalar slot."""
    checks = dict(rule.checks)
    kind = rule.json_type.name
    if "isin" in checks:
        return st.sampled_from(checks["isin"]["allowed_values"])
    if "str_matches" in checks:
        return st.from_regex(checks["str_matches"]["pattern"], fullmatch=True)
    if "iso_timestamp" in checks:
        moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1))
        return moments.map(lambda m: m.strftime("%Y-%m-%dT%H:%M:%S") + "Z")
    if kind == "string":
        length = checks.get("str_length", {})
        prefix = checks.get("str_startswith", {}).get("string", "")
        shortest = max((length.get("min_value") or 0) - len(prefix), 0)
        longest = min(length.get("max_value") or 12, 12) - len(prefix)
        return st.text(min_size=shortest, max_size=longest).map(lambda t: prefix + t)
    if kind == "boolean":
        return st.booleans()
    if kind == "date":
        return st.dates().map(date.isoformat)
    low, high, open_low, open_high = bounds(rule, -1000, 1000)
    if kind == "integer":
        return st.integers(int(low) + open_low, int(high) - open_high)
    if kind == "number":
        return st.one_of(st.integers(int(low) + 1, int(high) - 1),
                         st.floats(low, high, exclude_min=open_low, exclude_max=open_high))
    precision, scale = decimal_shape(rule)
    unit = Decimal(1).scaleb(-scale)
    largest = Decimal(10) ** (precision - scale) - unit
    least = max(Decimal(low) + (unit if open_low else 0), -largest)
    most = min(Decimal(high) - (unit if open_high else 0), largest)
    return st.decimals(least, most, places=scale).map(lambda d: Literal(str(d)))


def right_type_values(rule: FieldRule) -> st.SearchStrategy:
    """A value of the slot's JSON type that may break its rules."""
    kind = rule.json_type.name
    valid = valid_core(rule)
    if kind == "string":
        return st.one_of(valid, st.text(max_size=8))
    if kind in ("boolean", "date"):
        return valid
    low, high, _, _ = bounds(rule, -1000, 1000)
    if kind == "integer":
        return st.one_of(valid, st.integers(int(low) - 2, int(high) + 2), st.integers())
    if kind == "number":
        return st.one_of(valid, st.floats(low - 10, high + 10), st.integers(int(low) - 10, int(high) + 10))
    _, scale = decimal_shape(rule)
    return st.one_of(valid, st.decimals(low - 10, high + 10, places=scale + 1).map(lambda d: Literal(str(d))))


def edge_values(rule: FieldRule) -> list:
    """Values of the slot's JSON type at the edges of its type and its rules."""
    kind = rule.json_type.name
    if kind == "string":
        return TRICKY_STRINGS + (TIMESTAMPS if "iso_timestamp" in dict(rule.checks) else [])
    if kind == "boolean":
        return [True, False]
    if kind == "date":
        return DATE_EDGES
    low, high, _, _ = bounds(rule, -1000, 1000)
    if kind == "integer":
        return EDGE_INTEGERS + [int(low) - 1, int(low), int(high), int(high) + 1]
    if kind == "number":
        return EDGE_NUMBERS + [low - 0.5, low, high, high + 0.5]
    return DECIMAL_EDGES + [Literal(str(low)), Literal(str(high)), int(high) + 1, int(low) - 1]


def scalar_slots(scope: Scope) -> list[FieldRule]:
    """Every slot that holds a value, in the scope and its element scopes at any depth."""
    found = []
    for rule in scope.fields:
        if rule.items is not None:
            found += scalar_slots(rule.items)
        elif not rule.is_object:
            found.append(rule)
    return found


@dataclass(frozen=True)
class Pools:
    """A batch's values for each scalar slot (by `id` of its rule), drawn by hypothesis from
    the slot's rules: some that pass (`valid`), some of its type that may not (`right_type`)."""

    valid: dict[int, list]
    right_type: dict[int, list]


# ---- messages, drawn slot by slot -----------------------------------------------------------


class Drawing:
    """Draws messages of one scope, slot by slot, with a batch's pools and a seeded random.

    A batch is one hypothesis example: slot-by-slot draws of 70 nested messages would be
    more than one example holds, so hypothesis draws each slot's values and the seed, and
    the messages are put together from them here, as reproducibly."""

    def __init__(self, rng: random.Random, pools: Pools) -> None:
        self.rng = rng
        self.pools = pools

    def broken(self, rate: int) -> bool:
        return self.rng.random() * 100 < rate

    def message(self, scope: Scope) -> dict:
        return self.object(scope, self.rng.choice(RATES))

    def object(self, scope: Scope, rate: int) -> dict:
        """An object of a scope (the message, or an element): each slot drawn, parents first;
        nothing is drawn under an object that came out as no object."""
        message: dict = {}
        holders = {"": message}  # the objects drawn, by path, for the keys the contract does not name
        for rule in scope.fields:
            *parents, key = rule.name.split(".")
            parent = ".".join(parents)
            if parent not in holders:
                continue
            value = self.slot(rule, rate)
            if value is NEW_OBJECT:
                value = holders[rule.name] = {}
            if value is not MISSING:
                holders[parent][key] = value
        for path, holder in holders.items():
            if self.broken(rate):
                key = self.rng.choice(UNKNOWN_KEYS + shadowing_keys(scope, path))
                holder.setdefault(key, self.rng.choice(UNKNOWN_VALUES))
        return message

    def slot(self, rule: FieldRule, rate: int) -> Any:
        damaged = self.broken(rate)
        if not (rule.is_object or rule.is_array):
            return self.scalar(rule, damaged, element=False)
        value = NEW_OBJECT if rule.is_object else []
        if damaged:
            value = self.rng.choice([value, value, None, MISSING, self.other_type(rule)])
        elif rule.declared and self.rng.random() < 0.25:  # an implied object has to be there
            value = self.rng.choice([value] + [None] * rule.nullable + [MISSING] * (not rule.required))
        if isinstance(value, list) and rule.items is not None:
            value = [self.element(rule.items, rate) for _ in range(self.length(rule, damaged))]
        return value

    def scalar(self, rule: FieldRule, damaged: bool, *, element: bool) -> Any:
        """A value that passes, or with `damaged` anything: a value of its type (three times
        as likely), of another type, null or (not in an array) nothing."""
        if not damaged:
            absent = ([None] * rule.nullable + [MISSING] * (not rule.required and not element))
            if absent and self.rng.random() < 0.15:
                return self.rng.choice(absent)
            return self.rng.choice(self.pools.valid[id(rule)])
        kind = self.rng.choice(["right", "right", "edge", "other", "null", "missing"])
        if kind == "right":
            return self.rng.choice(self.pools.right_type[id(rule)])
        if kind == "edge":
            return self.rng.choice(edge_values(rule))
        if kind == "other":
            return self.other_type(rule)
        return None if kind == "null" or element else MISSING

    def other_type(self, rule: FieldRule) -> Any:
        takes = TAKES[rule.json_type.name]
        return copy.deepcopy(self.rng.choice([v for kind, values in OTHER_TYPES.items() if kind not in takes
                                              for v in values]))

    def length(self, rule: FieldRule, damaged: bool) -> int:
        """0..4 within the array's bounds; damaged, one short of the least, one past a most
        of up to 10 (a hundred elements would cost pandera seconds), or any of 0..4."""
        low, high, _, _ = bounds(rule, 0, 1000)
        if damaged:
            edges = [int(low) - 1] * (low > 0) + [int(high) + 1] * (high <= 10)
            return self.rng.choice(edges + [self.rng.randint(0, 4)])
        return self.rng.randint(int(max(low, 0)), int(min(high, 4)))

    def element(self, scope: Scope, rate: int) -> Any:
        damaged = self.broken(rate)
        if scope.scalar:
            return self.scalar(scope.fields[0], damaged, element=True)
        if damaged and self.rng.random() < 0.5:
            return copy.deepcopy(self.rng.choice([None, "x", 3, [], [{}], True, 1.5]))
        return self.object(scope, rate)


def shadowing_keys(scope: Scope, path: str) -> list[str]:
    """Keys with a dot that spell a path under the object at `path` (`"data.status"` at the
    root): one key of JSON, so no field the contract names."""
    prefix = path + "." if path else ""
    return [f.name[len(prefix):] for f in scope.fields
            if f.name.startswith(prefix) and "." in f.name[len(prefix):]][:2]


class Batch(list):
    """A batch of messages that hypothesis reports by its size: a failure names its message."""

    def __repr__(self) -> str:
        return f"<{len(self)} messages>"


@st.composite
def batches(draw, contract: Contract, size: tuple[int, int] = (60, 80)) -> list[dict]:
    """60 to 80 messages of a contract: each slot's values drawn from its rules, four that
    pass and four of its type, the messages put together from them by `Drawing`."""
    slots = scalar_slots(contract.scope)
    pools = Pools({id(r): draw(st.lists(valid_core(r), min_size=4, max_size=4)) for r in slots},
                  {id(r): draw(st.lists(right_type_values(r), min_size=4, max_size=4)) for r in slots})
    rng = draw(st.randoms(use_true_random=True))
    drawing = Drawing(rng, pools)
    return Batch(drawing.message(contract.scope) for _ in range(rng.randint(*size)))


# ---- what a message that passed is written as -------------------------------------------


def written_object(value: Any, scope: Scope, prefix: str = "") -> dict:
    """The named keys of one object of a scope, typed as valid/ holds them."""
    return {rule.name[len(prefix):]: written_slot(rule, value.get(rule.name[len(prefix):]), scope)
            for rule in scope.fields
            if rule.name.startswith(prefix) and "." not in rule.name[len(prefix):]}


def written_slot(rule: FieldRule, value: Any, scope: Scope) -> Any:
    if value is None:
        return None
    if rule.is_object:
        return written_object(value, scope, rule.name + ".")
    if rule.items is not None:
        items = rule.items
        if items.scalar:
            return [written_slot(items.fields[0], e, items) for e in value]
        return [None if e is None else written_object(e, items) for e in value]
    kind = rule.json_type.name
    text = value.text if isinstance(value, Literal) else repr(value)
    if kind == "decimal":
        return Decimal(text)
    if kind == "date":
        return date.fromisoformat(value)
    if kind == "number":
        return float(text)
    if any(name == "iso_timestamp" for name, _ in rule.checks):
        return datetime.fromisoformat(value).astimezone(UTC).replace(tzinfo=None)
    return value


MESSAGE = Path()  # the message itself


def kept_unknown(value: dict, scope: Scope, where: Path = MESSAGE) -> dict[str, Any]:
    """The keys a passing message has that its contract does not name, by path
    (`data.lines[1].discount`, `data["a.b"]`), where their scope keeps them (`Config.strict = False`)."""
    named = {f.path: f for f in scope.fields}
    found: dict[str, Any] = {}

    def visit(holder: dict, prefix: Path) -> None:
        for key, inner in holder.items():
            rule = named.get(prefix.key(key))
            if rule is None:
                if scope.strict is False:
                    found[str(where / prefix.key(key))] = inner
            elif rule.is_object and isinstance(inner, dict):
                visit(inner, prefix.key(key))
            elif rule.items is not None and not rule.items.scalar and isinstance(inner, list):
                for i, element in enumerate(inner):
                    found.update(kept_unknown(element, rule.items, where / prefix.key(key).index(i)))

    visit(value, Path())
    return found


def plain(value: Any) -> Any:
    """Spark's Rows and lists as dicts and lists, all the way down."""
    if isinstance(value, Row):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def json_value(value: Any) -> Any:
    """A generated value as `json.loads` reads its text."""
    return json.loads(encode(value))


# ---- the differential tests --------------------------------------------------------------


def assert_agree(spark, batch: list[dict], model: type[pa.DataFrameModel],
                 contract: Contract) -> list[set[tuple[str, str]]]:
    """Spark's reasons equal the oracle's, message by message; a message that passed is
    written as it came. Returns each message's reasons."""
    lines = [encode(m).encode() for m in batch]
    verdicts = validate_lines(lines_frame(spark, lines), contract, 1 << 20).orderBy("_row_id")
    with ThreadPoolExecutor(1) as spark_side:
        # pandera takes about as long on a batch as Spark's job: judge it while the job runs (the
        # plan is built first, here: its many Py4J calls would each wait for the GIL)
        job = spark_side.submit(verdicts.collect)
        references = [failed_reasons(decode(line), model, contract) for line in lines]
        rows = job.result()
    assert len(rows) == len(batch)
    keys = message_keys(contract)
    reasons = []
    for line, message, row, reference in zip(lines, batch, rows, references, strict=True):
        spark_reasons = {(r.rule, r.column) for r in row["_reasons"]}
        assert spark_reasons == reference, (f"{line.decode()}: spark only {spark_reasons - reference}, "
                                            f"pandera only {reference - spark_reasons}")
        if not spark_reasons:
            assert {k: plain(row[k]) for k in keys} == written_object(message, contract.scope), line
            if contract.keeps_unknown:
                kept = {entry.path: json.loads(entry.json) for entry in row[UNKNOWN] or []}
                expected = {path: json_value(v) for path, v in kept_unknown(message, contract.scope).items()}
                assert kept == expected, line
        reasons.append(spark_reasons)
    return reasons


BATCHES = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                   phases=[Phase.explicit, Phase.generate])  # a failure names its message; no shrinking


@BATCHES
@given(batch=batches(ORDER_EVENTS))
def test_spark_and_pandera_agree_on_order_events_reason_by_reason(spark, batch):
    assert_agree(spark, batch, OrderEvents, ORDER_EVENTS)


@BATCHES
@given(batch=batches(SHIPMENTS))
def test_spark_and_pandera_agree_on_strict_scopes_inner_arrays_and_a_nested_conditional(spark, batch):
    assert_agree(spark, batch, Shipments, SHIPMENTS)


# A Shipments message that passes, for the edges to be put into one at a time.
GOOD_SHIPMENT = {"id": "s-1", "data": {"status": "NEW", "amount": 1,
                                       "carrier": {"name": "DHL", "contact": {"phone": None}},
                                       "parcels": [{"ref": "P001", "weight": 1, "size": {"width": 2},
                                                    "packed_on": None}]}}


def shipment(**changes: Any) -> dict:
    """GOOD_SHIPMENT with `path=value` set, a path's keys joined by `__`, its array
    indices numbers (`data__parcels__0__weight`)."""
    message = copy.deepcopy(GOOD_SHIPMENT)
    for path, value in changes.items():
        *keys, last = [int(k) if k.isdigit() else k for k in path.split("__")]
        holder: Any = message
        for key in keys:
            holder = holder[key]
        holder[last] = value
    return message


def test_decimal_and_date_edges_agree_at_every_depth(spark):
    """Every decimal and date edge in every decimal and date slot of Shipments (the message's,
    an element's, an array of decimals' elements), in one batch."""
    decimals = DECIMAL_EDGES + [Literal(t) for t in ["999.9995", "-0.000", "1E-3", "9.99E1", "1e308"]]
    batch = [shipment(data__parcels__0__weight=edge) for edge in decimals]
    batch += [shipment(data__fees=[Literal("1.5"), edge]) for edge in decimals]
    batch += [shipment(data__due=edge) for edge in DATE_EDGES]
    batch += [shipment(data__parcels__0__packed_on=edge) for edge in DATE_EDGES]
    verdicts = assert_agree(spark, batch, Shipments, SHIPMENTS)
    assert set() in verdicts and {("data.fees[].out_of_range", "data.fees[1]")} in verdicts
    assert {("data.parcels[].weight.out_of_range", "data.parcels[0].weight")} in verdicts
    assert {("data.due.type(date)", "data.due")} in verdicts


def test_a_decimal_with_an_exponent_of_any_length_is_judged_by_its_value(spark):
    """JSON bounds no exponent: one beyond what a double, Python's decimal or Java's int holds
    names a number that no decimal(6,3) holds, unless the number is zero."""
    exponents = ["1e1000000", "1e-1000000", "1e99999999999999999999", "1e-99999999999999999999",
                 "0e99999999999999999999", "0e-99999999999999999999", "0.0e1000000", "-0e-5"]
    batch = [shipment(data__parcels__0__weight=Literal(e)) for e in exponents]
    out_of_range = {("data.parcels[].weight.out_of_range", "data.parcels[0].weight")}
    zero = {("data.parcels[].weight.greater_than(0)", "data.parcels[0].weight")}
    assert assert_agree(spark, batch, Shipments, SHIPMENTS) == [out_of_range] * 4 + [zero] * 4


def test_a_key_with_a_dot_names_no_path_of_the_contract(spark):
    """`{"data.status": 1}` is one JSON key, not `status` inside `data`: a strict scope finds it
    unexpected at every depth, named by its quoted path (`["data.status"]`), and a keeping one
    keeps it under that path, apart from `data.status`."""
    batch = [{**GOOD_SHIPMENT, "data.status": "NEW"},
             shipment(data__carrier={"name": "DHL", "contact": {"phone": "+1"}, "contact.phone": 1}),
             shipment(**{"data__parcels__0__size.unit": "cm"})]
    assert assert_agree(spark, batch, Shipments, SHIPMENTS) == [
        {('["data.status"].unexpected', '["data.status"]')},
        {('data.carrier["contact.phone"].unexpected', 'data.carrier["contact.phone"]')},
        {('data.parcels[]["size.unit"].unexpected', 'data.parcels[0]["size.unit"]')},
    ]
    event = {"id": "e-1", "source": "/shop/x", "specversion": "1.0", "type": "com.shop.order.paid",
             "time": "2026-11-20T10:00:00Z",
             "data": {"order_id": "o-1", "customer": {"id": "c-00001", "email": "a@b.co"},
                      "lines": [{"sku": "SKU-00001", "qty": 1, "price": Literal("1.50"), "sku.x": 2}],
                      "total": Literal("1.50"), "delivery_date": "2024-02-29"}}
    kept = {**event, "data.order_id": 1, "data": {**event["data"], "customer.id": "c-00002"}}
    assert assert_agree(spark, [event, kept], OrderEvents, ORDER_EVENTS) == [set(), set()]


def generated(contract: Contract, examples: int) -> list[dict]:
    """The messages of `examples` batches, as the differential tests draw them."""
    found: list[dict] = []

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(batch=batches(contract))
    def collect(batch):
        found.extend(batch)

    collect()
    return found


def test_the_generator_reaches_valid_and_every_kind_of_failure(spark):
    """The differential tests are only as good as what they generate: the generator reaches
    valid messages, and each kind of reason at depth and in elements. A thousand messages a
    contract are judged by Spark, which the tests above hold to pandera's verdict (pandera
    judges one message in tens of milliseconds)."""
    seen: set[str] = set()
    for contract in (ORDER_EVENTS, SHIPMENTS):
        lines = [encode(m).encode() for m in generated(contract, 14)]
        rows = validate_lines(lines_frame(spark, lines), contract, 1 << 20).collect()
        reasons = [{r.rule for r in row["_reasons"]} for row in rows]
        assert len(reasons) > 900 and sum(not r for r in reasons) > 100, contract.name  # passed
        seen.update(*reasons)
    kinds = {rule.rsplit(".", 1)[1].split("(")[0] for rule in seen if ".when(" not in rule}
    assert {"required", "not_nullable", "type", "out_of_range", "unexpected", "isin", "str_matches",
            "str_length", "iso_timestamp", "greater_than_or_equal_to", "less_than_or_equal_to",
            "greater_than", "in_range", "str_startswith"} <= kinds
    # objects at depth two and three
    assert {"data.customer.email.str_matches", "data.customer.address.zip.required",
            "data.carrier.contact.level.not_nullable", "data.carrier.contact.type(object)",
            "data.carrier.contact.level.less_than_or_equal_to(3)", "data.type(object)",
            "data.required"} <= seen
    # an element's own rules, and each kind of rule on an element's fields, at depth two too
    assert {"data.lines[].type(object)", "data.lines[].not_nullable", "data.parcels[].type(object)",
            "data.parcels[].parts[].type(object)", "data.parcels[].parts[].not_nullable",
            "data.lines[].sku.required", "data.lines[].qty.type(integer)",
            "data.lines[].price.out_of_range", "data.lines[].price.not_nullable",
            "data.parcels[].size.width.not_nullable", "data.parcels[].size.type(object)",
            "data.parcels[].packed_on.type(date)", "data.parcels[].parts.type(array)",
            "data.parcels[].parts[].code.isin", "data.parcels[].parts[].grams.greater_than(0)",
            "data.scores[].type(integer)", "data.scores[].out_of_range", "data.fees[].out_of_range",
            "data.fees[].type(number)", "data.tags[].not_nullable"} <= seen
    # length bounds, at the root and inside an element
    assert {"data.lines.greater_than_or_equal_to(1)", "data.parcels.less_than_or_equal_to(4)",
            "data.parcels[].parts.less_than_or_equal_to(3)", "data.fees.less_than_or_equal_to(3)",
            "data.tags.less_than_or_equal_to(10)"} <= seen
    # keys the contract does not name, in every strict scope, and one that spells a named path
    assert {"zz.unexpected", "data.zz.unexpected", "data.carrier.contact.zz.unexpected",
            "data.parcels[].zz.unexpected", "data.parcels[].size.zz.unexpected",
            '["data.status"].unexpected', 'data.parcels[]["size.unit"].unexpected'} <= seen
    assert "data.amount.greater_than(0).when(data.status in (PAID,SHIPPED))" in seen
