"""Write sample `order_events` batches: nested CloudEvents messages (JSON lines), each line
with the exact reasons the engine must give it.

The message model is `contracts/order_events.py`. A reason is (rule, column): the column
is the path of the field (with the element's 0-based index inside arrays,
`data.lines[2].qty`), the rule the path pattern (`data.lines[].qty`) followed by what
failed: `required`, `not_nullable`, `type(<json type>)`, `out_of_range` or the check's
id as `foodtaster.engine.judging.rules.rule_id` gives it. The bytes and parse layers name no
column. Planning, placement, outcomes and the batch's shape are the flat generator's
(`foodtaster_dev.sample`); only the messages differ.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial
from pathlib import Path

from foodtaster_dev import sample
from foodtaster_dev.sample import (
    LineTruth,
    SampleBatch,
    _expected,
    _pick,
    _place,
    _timestamps,
    _units,
)

DATASET = "order_events"
Reason = tuple[str, str | None]  # (rule, column); column None for the bytes and parse layers
Reasons = frozenset[Reason]
NO_REASONS: Reasons = frozenset()

POISON_KINDS: tuple[str, ...] = (
    # bytes layer
    "invalid_utf8",
    # parse layer
    "truncated_json", "too_deep",
    # contract layer: objects on the path
    "data_missing", "data_null", "data_not_object", "customer_not_object",
    "missing_nested_field", "null_nested_field", "address_partial",
    # contract layer: arrays and their elements
    "lines_not_array", "lines_empty", "element_not_object", "null_element", "element_bad_qty",
    "element_wrong_type", "element_missing_sku", "bad_sku", "negative_price", "price_too_precise",
    "multi_element", "bad_tag", "too_many_tags",
    # contract layer: scalars
    "total_too_big", "bad_date", "bad_envelope", "bad_time",
    # not poison, but not a new message either: dropped, counted
    "redelivery",
)

EVENT_TYPES = ("com.shop.order.created", "com.shop.order.paid", "com.shop.order.shipped")
DEEP = 1001  # arrays nested in one unknown field: past the parser's 1000 levels

# Check ids as `rules.rule_id` names them from the contract (tests/unit/test_sample_events.py
# holds these to it), without importing pandera or Spark here.
GE_1 = "greater_than_or_equal_to(1)"
GE_0 = "greater_than_or_equal_to(0)"
LE_1000 = "less_than_or_equal_to(1000)"
LE_10 = "less_than_or_equal_to(10)"
TAG_LENGTH = "str_length(min_value=1,max_value=32)"
# What an undeclared object on the path takes with it when it is missing or null: its
# required fields (a nullable one passes null; the optional address is not judged).
_DATA_REQUIRED = ("data.order_id", "data.customer.id", "data.customer.email", "data.lines",
                  "data.total", "data.delivery_date")
_DATA_NULLABLE = frozenset({"data.delivery_date"})
_CUSTOMER_REQUIRED = ("data.customer.id", "data.customer.email")

# Two producers, two ways of writing JSON: compact with CloudEvents' key order, and
# json.dumps' default spacing with another order at every depth. The engine must not care.
_SEPARATORS = ((",", ":"), (", ", ": "))
_SOURCES = ("/shop/checkout", "/shop/fulfilment")
# {0} day (YYYYMMDD), {1} seed, {2} n, {3} type, {4} time, {5} optional envelope fields,
# {6} customer, {7} lines and total, {8} tags, delivery date and extras. One order a message:
# order_events is a conversation dataset, and a shared order would hold good messages behind
# a poison one.
_TEMPLATES = (
    '{{"specversion":"1.0","id":"ev-{0}-{1}-{2:06d}","source":"/shop/checkout","type":"{3}",'
    '"time":"{4}"{5},"data":{{"order_id":"o-{0}-{1}-{2}",{6},{7},{8}}}}}\n',
    '{{"id": "ev-{0}-{1}-{2:06d}", "time": "{4}", "type": "{3}", "source": "/shop/fulfilment", '
    '"specversion": "1.0"{5}, "data": {{{8}, {7}, {6}, "order_id": "o-{0}-{1}-{2}"}}}}\n',
)
# Street, zip, country: the zips of each country's own shape.
_ADDRESSES = (
    ("{} Main St", "94103", "US"), ("{} Elm Ave", "10001", "US"), ("Hauptstraße {}", "10115", "DE"),
    ("Bahnhofstrasse {}", "8001", "CH"), ("{} rue de la Paix", "75002", "FR"),
    ("{} Baker St", "NW1 6XE", "GB"), ("1-{} Chiyoda", "100-0001", "JP"),
)
_NAMES = ("ana", "bo", "chen", "dara", "eli", "fatima", "goran", "hana", "ines", "jun")
_DOMAINS = ("example.com", "mail.example.org", "shop.example.de")
_TAGS = ("gift", "express", "b2b", "fragile", "café", "promo-WINTER10", "🎁", "x")
_DATA_EXTRAS: tuple[dict[str, object], ...] = (
    {"channel": "web"}, {"channel": "mobile"}, {"gift_note": "Alles Gute 🎁"},
    {"meta": {"ab": "B", "attempt": 2, "flags": [1, None, {"deep": []}]}},
)

_dumps = partial(json.dumps, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class EventTruth(LineTruth):
    """A line's truth with the reasons the engine must give it (none for a kept or dropped line)."""

    reasons: Reasons = NO_REASONS


# ---------------------------------------------------------------- good lines


def _decimal(cents: int, rng: random.Random) -> str:
    """A JSON number of at most two decimals, written the ways producers do: `12`, `12.0`,
    `12.00`, `12.5`, `12.50`, `12.34`."""
    whole, frac = divmod(cents, 100)
    if frac == 0:
        return rng.choices((f"{whole}", f"{whole}.0", f"{whole}.00"), (6, 1, 2))[0]
    if frac % 10 == 0:
        return rng.choice((f"{whole}.{frac // 10}", f"{whole}.{frac:02d}"))
    return f"{whole}.{frac:02d}"


def _price_cents(rng: random.Random) -> int:
    """Lognormal around 15, priced like shops do: whole, to the dime, x.99, or any cent;
    now and then a free item."""
    form = rng.random()
    if form < 0.02:
        return 0
    cents = round(min(rng.lognormvariate(math.log(15), 1.0), 99_999.99) * 100)
    if form < 0.30:
        return max(round(cents, -2), 100)
    if form < 0.45:
        return max(round(cents, -1), 10)
    if form < 0.70:
        return max(round(cents, -2), 100) - 1
    return max(cents, 1)


def _order_line(sku: int, qty: int, price: str, style: int, extra: str = "") -> str:
    if style == 0:
        return f'{{"sku":"SKU-{sku:05d}","qty":{qty},"price":{price}{extra}}}'
    return f'{{"qty": {qty}, "price": {price}, "sku": "SKU-{sku:05d}"{extra}}}'


def _lines_and_totals(rng: random.Random, size: int, style: int) -> list[str]:
    """`"lines":[..],"total":..` fragments (the other key order for the second producer):
    1..6 lines, the total their exact sum, sometimes a `discount` the contract does not name."""
    comma, colon = _SEPARATORS[style]
    fragments = []
    for i in range(size):
        count = rng.choices(range(1, 7), (35, 25, 15, 10, 8, 7))[0]
        elements, total = [], 0
        for _ in range(count):
            qty = rng.choices((1, 2, 3, 4, 5, 10, rng.randint(1, 1000)), (55, 20, 8, 5, 5, 4, 3))[0]
            cents = _price_cents(rng)
            total += qty * cents
            extra = ""
            if rng.random() < 0.1:
                discount = rng.choice(({"code": "WINTER10", "pct": 10}, 0.5, "staff", None))
                extra = comma + '"discount"' + colon + _dumps(discount, separators=_SEPARATORS[style])
            elements.append(_order_line(rng.randrange(100_000), qty, _decimal(cents, rng), style, extra))
        if i == 0:  # the edges of the contract are valid too: qty 1000, price 0
            elements, total = [_order_line(0, 1000, "0.01", style), _order_line(99_999, 1, "0", style)], 1000
        elif i == 1:  # the largest price decimal(10,2) holds
            elements, total = [_order_line(12_345, 1, "99999999.99", style)], 9_999_999_999
        lines = f'"lines"{colon}[{comma.join(elements)}]'
        total_text = f'"total"{colon}{_decimal(total, rng)}'
        fragments.append(f"{lines}{comma}{total_text}" if style == 0 else f"{total_text}{comma}{lines}")
    return fragments


def _address(rng: random.Random) -> dict[str, object]:
    street, zip_code, country = rng.choice(_ADDRESSES)
    return {"street": street.format(rng.randint(1, 250)), "zip": zip_code, "country": country}


def _customers(rng: random.Random, size: int, style: int) -> list[str]:
    """`"customer":{..}` fragments: the address present, absent or null, now and then with
    a field the contract does not name, and sometimes a `loyalty` object it does not name."""
    fragments = []
    for _ in range(size):
        number = rng.randrange(100_000)
        email = f"{rng.choice(_NAMES)}.{number}@{rng.choice(_DOMAINS)}"
        fields: list[tuple[str, object]] = [("id", f"c-{number:05d}"), ("email", email)]
        form = rng.random()
        if form < 0.70:
            address = _address(rng)
            if rng.random() < 0.1:
                address["line2"] = f"Apt {rng.randint(1, 40)}"
            fields.append(("address", address))
        elif form >= 0.85:
            fields.append(("address", None))
        if rng.random() < 0.2:
            fields.append(("loyalty", {"tier": rng.choice(("silver", "gold")),
                                       "points": rng.randrange(5000)}))
        if style == 1:
            fields.reverse()
        customer = dict(fields)
        fragments.append(_dumps({"customer": customer}, separators=_SEPARATORS[style])[1:-1])
    return fragments


def _tails(rng: random.Random, size: int, style: int, day: date) -> list[str]:
    """The rest of `data`: tags (present or not, sometimes empty), the delivery date (now
    and then null) and sometimes a field the contract does not name."""
    fragments = []
    for i in range(size):
        fields: list[tuple[str, object]] = []
        if rng.random() < 0.4:
            fields.append(("tags", rng.sample(_TAGS, rng.randint(0, 3))))
        delivery = day + timedelta(days=rng.randint(1, 10))
        fields.append(("delivery_date", delivery.isoformat() if rng.random() < 0.9 else None))
        if rng.random() < 0.1:
            fields.extend(rng.choice(_DATA_EXTRAS).items())
        if i == 0:  # edges: ten tags, the longest and shortest a tag may be, a leap day
            fields = [("tags", ["t" * 32, "g", *_TAGS[:8]]), ("delivery_date", "2028-02-29")]
        if style == 1:
            fields.reverse()
        fragments.append(_dumps(dict(fields), separators=_SEPARATORS[style])[1:-1])
    return fragments


def _envelope_extras(style: int) -> tuple[str, ...]:
    """Envelope attributes beyond the contract's: mostly datacontenttype, sometimes none."""
    comma, colon = _SEPARATORS[style]
    content = f'{comma}"datacontenttype"{colon}"application/json"'
    return ("", content, content, f'{content}{comma}"partitionkey"{colon}"shop-eu-1"')


def _good_lines(rng: random.Random, seed: int, day: date) -> Callable[[int], str]:
    """A function n -> the good line of id `ev-<day>-<seed>-<n>`, order `o-<day>-<seed>-<n>`.

    Lines are assembled from precomputed pools of fragments with one format call and one
    random draw each, which is what makes millions of lines cheap."""
    times = _timestamps(rng, day, 1 << 16)
    types = rng.choices(EVENT_TYPES, (50, 35, 15), k=256)
    extras = [_envelope_extras(s) for s in (0, 1)]
    customers = [_customers(rng, 1 << 12, s) for s in (0, 1)]
    lines = [_lines_and_totals(rng, 1 << 14, s) for s in (0, 1)]
    tails = [_tails(rng, 1 << 10, s, day) for s in (0, 1)]
    formats = [template.format for template in _TEMPLATES]
    bits = rng.getrandbits
    stamp = f"{day:%Y%m%d}"

    def good(n: int) -> str:
        r = bits(64)
        style = (r & 3) == 0  # one line in four comes from the fulfilment service
        return formats[style](
            stamp, seed, n, types[(r >> 2) & 0xFF], times[(r >> 10) & 0xFFFF],
            extras[style][(r >> 26) & 3], customers[style][(r >> 28) & 0xFFF],
            lines[style][(r >> 40) & 0x3FFF], tails[style][(r >> 54) & 0x3FF],
        )

    return good


# ---------------------------------------------------------------- poison lines
# Each maker takes a good record, which instance of its kind this is (to rotate through
# variants), the rng and `dump` (the record as its producer's JSON, without a newline).
# It returns the line and its reasons. A str holds invalid bytes as surrogate escapes.

Maker = Callable[[dict, int, random.Random, Callable[[object], str]], tuple[str, Reasons]]


def _reason(path: str, failed: str, column: str | None = None) -> Reason:
    """(`<path>.<failed>`, column): the column is the path itself unless an element's is given."""
    return f"{path}.{failed}", path if column is None else column


def _invalid_utf8(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    bad = _pick((b"\xff\xfe", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf"), variant)
    customer = rec["data"]["customer"]
    customer["email"] += bad.decode("utf-8", "surrogateescape")
    return dump(rec), frozenset({("line.not_utf8", None)})


def _truncated_json(rec: dict, _variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    text = dump(rec)
    return text[: rng.randrange(len(text) // 3, len(text) - 1)], frozenset({("json.invalid", None)})


def _too_deep(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    holder = _pick((rec, rec["data"]["customer"]), variant)
    holder["x"] = "__deep__"  # a placeholder json.dumps can write; the arrays replace it
    text = dump(rec).replace('"__deep__"', "[" * DEEP + "]" * DEEP, 1)
    return text, frozenset({("json.too_deep", None)})


def _data_missing(rec: dict, _variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    del rec["data"]
    return dump(rec), frozenset(_reason(path, "required") for path in _DATA_REQUIRED)


def _data_null(rec: dict, _variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    rec["data"] = None  # every field under it is null: optional ones too, so `data.tags` is a reason
    under = (*_DATA_REQUIRED, "data.tags")
    return dump(rec), frozenset(_reason(path, "not_nullable") for path in under if path not in _DATA_NULLABLE)


def _data_not_object(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    rec["data"] = _pick((rec["data"]["order_id"], [rec["data"]], 42), variant)
    return dump(rec), frozenset({_reason("data", "type(object)")})


def _customer_not_object(rec: dict, variant: int, _rng: random.Random,
                         dump: Callable) -> tuple[str, Reasons]:
    data = rec["data"]
    data["customer"] = _pick((data["customer"]["id"], [data["customer"]], 42, True), variant)
    return dump(rec), frozenset({_reason("data.customer", "type(object)")})


def _missing_nested_field(rec: dict, variant: int, _rng: random.Random,
                          dump: Callable) -> tuple[str, Reasons]:
    path = _pick(("data.customer.email", "data.total", "data.delivery_date", "data.order_id",
                  "data.customer", "data.customer.id", "data.lines"), variant)
    parent, _, name = path.rpartition(".")
    del _at(rec, parent)[name]
    paths = _CUSTOMER_REQUIRED if path == "data.customer" else (path,)
    return dump(rec), frozenset(_reason(p, "required") for p in paths)


def _null_nested_field(rec: dict, variant: int, rng: random.Random,
                       dump: Callable) -> tuple[str, Reasons]:
    path = _pick(("data.customer.email", "data.total", "data.order_id", "data.customer",
                  "data.customer.address.zip", "data.lines[].price"), variant)
    if path == "data.lines[].price":
        i = rng.randrange(len(rec["data"]["lines"]))
        rec["data"]["lines"][i]["price"] = None
        return dump(rec), frozenset({_reason(path, "not_nullable", f"data.lines[{i}].price")})
    if path.startswith("data.customer.address."):
        _whole_address(rec, rng)
    parent, _, name = path.rpartition(".")
    _at(rec, parent)[name] = None
    paths = _CUSTOMER_REQUIRED if path == "data.customer" else (path,)
    return dump(rec), frozenset(_reason(p, "not_nullable") for p in paths)


def _address_partial(rec: dict, variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    address = _whole_address(rec, rng)
    gone = _pick((("zip",), ("street",), ("country",), ("street", "zip")), variant)
    for name in gone:
        del address[name]
    return dump(rec), frozenset(_reason(f"data.customer.address.{name}", "required") for name in gone)


def _lines_not_array(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    data = rec["data"]
    data["lines"] = _pick((data["lines"][0], "SKU-00017", len(data["lines"])), variant)
    return dump(rec), frozenset({_reason("data.lines", "type(array)")})


def _lines_empty(rec: dict, _variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    rec["data"]["lines"] = []
    return dump(rec), frozenset({_reason("data.lines", GE_1)})


def _element_not_object(rec: dict, variant: int, rng: random.Random,
                        dump: Callable) -> tuple[str, Reasons]:
    lines = rec["data"]["lines"]
    i = rng.randrange(len(lines))
    lines[i] = _pick((lines[i]["sku"], 3, [lines[i]["sku"], 1, 9.99], True), variant)
    return dump(rec), frozenset({_reason("data.lines[]", "type(object)", f"data.lines[{i}]")})


def _null_element(rec: dict, _variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    lines = rec["data"]["lines"]
    i = rng.randrange(len(lines))
    lines[i] = None
    return dump(rec), frozenset({_reason("data.lines[]", "not_nullable", f"data.lines[{i}]")})


def _element_field(rec: dict, name: str, value: object, failed: str, rng: random.Random) -> Reason:
    """Set one random element's field; the reason that gives."""
    lines = rec["data"]["lines"]
    i = rng.randrange(len(lines))
    lines[i][name] = value
    return _reason(f"data.lines[].{name}", failed, f"data.lines[{i}].{name}")


def _element_bad_qty(rec: dict, variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    qty, failed = _pick(((0, GE_1), (1001, LE_1000), (-3, GE_1)), variant)
    reason = _element_field(rec, "qty", qty, failed, rng)
    return dump(rec), frozenset({reason})


def _element_wrong_type(rec: dict, variant: int, rng: random.Random,
                        dump: Callable) -> tuple[str, Reasons]:
    name, value, json_type = _pick((
        ("qty", "2", "integer"), ("qty", 2.0, "integer"), ("price", "19.99", "number"),
        ("sku", 17, "string"), ("qty", True, "integer"),
    ), variant)
    reason = _element_field(rec, name, value, f"type({json_type})", rng)
    return dump(rec), frozenset({reason})


def _element_missing_sku(rec: dict, _variant: int, rng: random.Random,
                         dump: Callable) -> tuple[str, Reasons]:
    lines = rec["data"]["lines"]
    i = rng.randrange(len(lines))
    del lines[i]["sku"]
    return dump(rec), frozenset({_reason("data.lines[].sku", "required", f"data.lines[{i}].sku")})


def _bad_sku(rec: dict, variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    sku = _pick(("SKU-17", "sku-00017", "SKU-000170", ""), variant)
    reason = _element_field(rec, "sku", sku, "str_matches", rng)
    return dump(rec), frozenset({reason})


def _negative_price(rec: dict, variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    price = _pick((-1.5, -0.01, -20), variant)
    reason = _element_field(rec, "price", price, GE_0, rng)
    return dump(rec), frozenset({reason})


def _price_too_precise(rec: dict, variant: int, rng: random.Random,
                       dump: Callable) -> tuple[str, Reasons]:
    price = _pick((19.999, 0.001, 5.125, 12.3456), variant)
    reason = _element_field(rec, "price", price, "out_of_range", rng)
    return dump(rec), frozenset({reason})


def _multi_element(rec: dict, variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    """Two bad elements: one reason each, told apart by their index."""
    lines = rec["data"]["lines"]
    while len(lines) < 3:
        lines.append({"sku": f"SKU-{rng.randrange(100_000):05d}", "qty": 1, "price": 1.5})
    first, second = sorted(rng.sample(range(len(lines)), 2))
    form = variant % 3
    if form == 0:
        lines[first]["qty"] = lines[second]["qty"] = 0
        reasons = {_reason("data.lines[].qty", GE_1, f"data.lines[{i}].qty") for i in (first, second)}
    elif form == 1:
        lines[first] = None
        del lines[second]["sku"]
        reasons = {_reason("data.lines[]", "not_nullable", f"data.lines[{first}]"),
                   _reason("data.lines[].sku", "required", f"data.lines[{second}].sku")}
    else:
        lines[first]["price"] = 1.234
        lines[second] = "SKU-00017"
        reasons = {_reason("data.lines[].price", "out_of_range", f"data.lines[{first}].price"),
                   _reason("data.lines[]", "type(object)", f"data.lines[{second}]")}
    return dump(rec), frozenset(reasons)


def _bad_tag(rec: dict, variant: int, rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    tags = rec["data"].setdefault("tags", [])
    if not tags:
        tags.append("gift")
    i = rng.randrange(len(tags))
    tags[i] = _pick(("", "gift-wrapped-with-a-handwritten-card", "t" * 33), variant)
    return dump(rec), frozenset({_reason("data.tags[]", TAG_LENGTH, f"data.tags[{i}]")})


def _too_many_tags(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    rec["data"]["tags"] = [f"tag-{i}" for i in range(11 + variant % 3)]
    return dump(rec), frozenset({_reason("data.tags", LE_10)})


def _total_too_big(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    rec["data"]["total"] = _pick((12_345_678_901, 10_000_000_000.5, 99_999_999_999.99), variant)
    return dump(rec), frozenset({_reason("data.total", "out_of_range")})


def _bad_date(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    rec["data"]["delivery_date"] = _pick(
        ("2026-02-30", "2026-11-31", "2026-13-01", "2025-02-29", "23/11/2026"), variant)
    return dump(rec), frozenset({_reason("data.delivery_date", "type(date)")})


def _bad_envelope(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    field, value, failed = _pick((
        ("specversion", "0.3", "isin"), ("type", "com.shop.order.lost", "isin"),
        ("source", "/warehouse/picking", "str_startswith(/shop/)"),
    ), variant)
    rec[field] = value
    return dump(rec), frozenset({_reason(field, failed)})


def _bad_time(rec: dict, variant: int, _rng: random.Random, dump: Callable) -> tuple[str, Reasons]:
    day = rec["time"][:10]
    rec["time"] = _pick(("yesterday", f"{day}T10:00:00", f"{day[:4]}-02-30T10:00:00Z"), variant)
    return dump(rec), frozenset({_reason("time", "iso_timestamp")})


def _at(rec: dict, path: str) -> dict:
    """The object at a dotted path of plain (not array) keys."""
    for key in path.split("."):
        rec = rec[key]
    return rec


def _whole_address(rec: dict, rng: random.Random) -> dict:
    """The customer's address, made present and whole first when it was absent or null."""
    customer = rec["data"]["customer"]
    if not isinstance(customer.get("address"), dict):
        customer["address"] = _address(rng)
    return customer["address"]


_MAKERS: dict[str, Maker] = {
    "invalid_utf8": _invalid_utf8, "truncated_json": _truncated_json, "too_deep": _too_deep,
    "data_missing": _data_missing, "data_null": _data_null, "data_not_object": _data_not_object,
    "customer_not_object": _customer_not_object, "missing_nested_field": _missing_nested_field,
    "null_nested_field": _null_nested_field, "address_partial": _address_partial,
    "lines_not_array": _lines_not_array, "lines_empty": _lines_empty,
    "element_not_object": _element_not_object, "null_element": _null_element,
    "element_bad_qty": _element_bad_qty, "element_wrong_type": _element_wrong_type,
    "element_missing_sku": _element_missing_sku, "bad_sku": _bad_sku,
    "negative_price": _negative_price, "price_too_precise": _price_too_precise,
    "multi_element": _multi_element, "bad_tag": _bad_tag, "too_many_tags": _too_many_tags,
    "total_too_big": _total_too_big, "bad_date": _bad_date, "bad_envelope": _bad_envelope,
    "bad_time": _bad_time,
}


# ---------------------------------------------------------------- the batch


def generate_events(out_dir: str | Path, *, messages: int = 1000, seed: int = 7,
                    poison_rate: float = 0.05, batch_date: str = "2026-11-20",
                    files: int = 2, gzip_files: int = 0,
                    kinds: Sequence[str] | None = None,
                    keep_truth: bool = True) -> SampleBatch:
    """Write `messages` order events over `files` files in out_dir (the last `gzip_files`
    gzip-compressed) and return each line's kind, expected outcome and reasons
    (`EventTruth`).

    The same arguments give byte-identical files. About `poison_rate` of the lines are
    poison, spread over `kinds` (default: all of POISON_KINDS); each requested kind
    appears at least once when messages >= 4 * len(kinds). keep_truth=False skips the
    per-line truth (millions of lines); the counts stay.
    """
    day = date.fromisoformat(batch_date)
    wanted = sample.checked_kinds(kinds, POISON_KINDS, messages, files, gzip_files, poison_rate)

    rng = random.Random(seed)
    bounds = [i * messages // files for i in range(files + 1)]
    plan = _place(_units(messages, poison_rate, wanted, rng), bounds, rng)
    labels = {n: ("good" if kind == "source" else kind) for n, (kind, _) in plan.items()}
    good = _good_lines(rng, seed, day)
    sources: dict[int, str] = {}  # redelivery instance -> the exact line to copy
    reasons: dict[int, Reasons] = {}  # poison line -> its reasons

    def special(n: int) -> str:
        kind, instance = plan[n]
        if kind == "source":
            sources[instance] = good(n)
            return sources[instance]
        if kind == "redelivery":
            return sources.pop(instance)
        line = good(n)
        # poison keeps its producer's spacing; the second producer starts with `"id"`
        dump = partial(_dumps, separators=_SEPARATORS[line.startswith('{"id"')])
        text, reasons[n] = _MAKERS[kind](json.loads(line), instance, rng, dump)
        return text + "\n"

    def line(n: int) -> str:
        return special(n) if n in plan else good(n)

    def line_truth(name: str, number: int, n: int) -> EventTruth:
        kind = labels.get(n, "good")
        return EventTruth(name, number, kind, _expected(kind), reasons.get(n, NO_REASONS))

    paths, truth = sample.write_files(Path(out_dir), f"{DATASET}-{day.isoformat()}", bounds, gzip_files,
                                      line, line_truth if keep_truth else None)
    return SampleBatch(files=paths, truth=truth, messages=messages,
                       outcomes=sample.counted_outcomes(labels, messages, _expected))


def write_truth(truth: Sequence[EventTruth], path: str | Path) -> None:
    """The truth as JSON lines, as `sample.write_truth` writes it, with each line's reasons
    as sorted [rule, column] pairs."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(
            json.dumps({"file": t.file, "line": t.line, "kind": t.kind, "expected": t.expected,
                        "reasons": sorted(t.reasons, key=lambda r: (r[0], r[1] or ""))},
                       ensure_ascii=False) + "\n"
            for t in truth
        )
