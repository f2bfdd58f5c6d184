"""Write sample `payment_events` batches: a payment provider's charge webhooks (JSON lines),
judged by a JSON Schema (`contracts/payment_events.schema.json`), each line with the exact
reasons the engine must give it.

Good messages vary as two producers write them (key order, spacing, a timestamp as epoch
seconds or an RFC 3339 string, `1500.0` for an integer, nulls and absences where the schema
allows them, fields the schema does not name in its open objects). Every kind of poison:
bytes, parse, and each keyword of the schema broken, at every depth. Planning and placement
are the flat generator's (`foodtaster_dev.sample`), the truth record `sample_events`'.
"""

from __future__ import annotations

import json
import random
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path as FilePath

from foodtaster.contract.path import Path
from foodtaster_dev import sample
from foodtaster_dev.sample import SampleBatch
from foodtaster_dev.sample_events import NO_REASONS, EventTruth, Reason, Reasons

DATASET = "payment_events"
SCHEMA = FilePath(__file__).resolve().parent.parent / "contracts" / f"{DATASET}.schema.json"
ASSERT_FORMATS = ("date-time", "email", "uri")  # pipeline.yaml's assert_formats for the dataset

# ---------------------------------------------------------------- the rule naming assumed
# One place, for the judge to align to. A reason is (rule, column): `column` is the exact path
# of the failing value as `foodtaster.contract.path.Path` prints it (an element by its index,
# a key holding a dot quoted: `data.object.billing_details.address["apt.no"]`); `rule` is the
# column's pattern (`data.object.refunds.data[].amount`), a dot, and the failing keyword:
#   - with its argument in parentheses: type(integer), type(string,null) (the schema's list, in
#     its order), minimum(1), maximum(12), exclusiveMinimum(0), minLength(1), maxLength(1000),
#     maxItems(10), maxProperties(20), format(email);
#   - bare: enum, const, pattern, oneOf, anyOf;
#   - `required` at the missing property's own path: `data.object.currency.required`;
#   - `additionalProperties`: the rule at the closed object's pattern, the column the unexpected
#     property's path (`...address.additionalProperties` at `...address.floor`), one a property.
# `$ref` adds nothing to a name. A failure inside a branch of oneOf/anyOf is one reason, the
# combinator's, at the instance: a broken `shipping` (`oneOf: [shipping, null]`) is
# `data.object.shipping.oneOf`. Keywords are judged as the spec says, each on its own: a value
# of the wrong type fails `type` and no keyword of another type (`minimum` passes a string),
# while 0.5 for `{"type": "integer", "minimum": 1}` fails both.
# The bytes and parse layers keep their rules and name no column.


def rule(column: str, keyword: str, argument: object = None) -> Reason:
    """The reason `keyword` gives the value at `column` (an exact path), named as above."""
    words = keyword if argument is None else f"{keyword}({argument})"
    return f"{Path.parse(column).pattern}.{words}", column


def extra(obj: str, key: str) -> Reason:
    """An unexpected property `key` of the closed object at `obj`."""
    return rule(obj, "additionalProperties")[0], str(Path.parse(obj).key(key))


POISON_KINDS: tuple[str, ...] = (
    "invalid_utf8", "nul_byte", "truncated_json", "nan", "top_level_array",  # bytes, parse
    "missing_required", "wrong_type", "null_not_allowed", "fraction_integer", "below_minimum",
    "above_maximum", "refund_not_positive", "unknown_enum", "wrong_const", "pattern_mismatch",
    "empty_name", "too_long", "too_many_refunds", "too_much_metadata", "closed_address",
    "bad_timestamp", "broken_shipping", "broken_request", "bad_format", "bad_refund",
    "several_at_once",
)

EVENT_TYPES = ("charge.succeeded", "charge.failed", "charge.captured", "charge.refunded")
_SEPARATORS = ((",", ":"), (", ", ": "))
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_CITIES = (("Berlin", "10115", "DE", None), ("Paris", "75002", "FR", None), ("Austin", "78701", "US", "TX"),
           ("Zürich", "8001", "CH", "ZH"), ("London", "NW1 6XE", "GB", None),
           ("東京", "100-0001", "JP", None))
_NAMES = ("Ana Souza", "Bo Li", "Chen Wei", "Dara O'Neil", "Élodie Martin", "Fatima Zahra", "Jun Sato")
_BRANDS = ("visa", "mastercard", "amex", "discover", "jcb", "unionpay", "diners")


def _token(rng: random.Random, n: int = 24) -> str:
    return "".join(rng.choice(_ALNUM) for _ in range(n))


def _instant(rng: random.Random, day: date) -> object:
    """Epoch seconds (now and then written `1732665600.0`, an integer too) or RFC 3339."""
    at = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(seconds=rng.randrange(86_400))
    form = rng.random()
    if form < 0.55:
        return int(at.timestamp())
    if form < 0.6:
        return float(int(at.timestamp()))
    if form < 0.8:
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return (at + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randrange(1000):03d}+01:00"


def _address(rng: random.Random) -> dict[str, object]:
    city, postal, country, state = rng.choice(_CITIES)
    address: dict[str, object] = {"line1": f"{rng.randint(1, 250)} Main St", "city": city,
                                  "postal_code": postal, "country": country, "state": state}
    if rng.random() < 0.3:
        address["line2"] = rng.choice((None, f"Apt {rng.randint(1, 40)}"))
    if rng.random() < 0.1:
        address = {"country": country}  # only what the schema requires
    return address


def _charge(rng: random.Random, day: date, kind: str) -> dict[str, object]:
    amount = rng.choice((500, 1500, 2999, rng.randint(1, 99_999_999)))
    refunds = []
    if kind == "charge.refunded":
        for _ in range(rng.randint(1, 3)):
            refunds.append({"id": f"re_{_token(rng)}", "amount": rng.randint(1, amount),
                            "created": _instant(rng, day), "status": rng.choice(("succeeded", "pending")),
                            "reason": rng.choice(("requested_by_customer", "duplicate", None))})
    name = rng.choice(_NAMES)
    charge: dict[str, object] = {
        "id": f"ch_{_token(rng)}", "object": "charge",
        "amount": float(amount) if rng.random() < 0.05 else amount,  # 1500.0 is an integer
        "amount_refunded": sum(int(r["amount"]) for r in refunds),
        "currency": rng.choice(("usd", "eur", "chf")),
        "status": "failed" if kind == "charge.failed" else "succeeded",
        "paid": kind != "charge.failed", "refunded": bool(refunds), "created": _instant(rng, day),
        "customer": rng.choice((None, f"cus_{_token(rng, 14)}")),
        "billing_details": {"address": _address(rng), "email": rng.choice((None, "billing@example.com")),
                            "name": rng.choice((None, name)), "phone": None},
        "payment_method_details": {"type": "card", "card": {
            "brand": rng.choice(_BRANDS), "last4": f"{rng.randrange(10_000):04d}",
            "exp_month": rng.randint(1, 12), "exp_year": rng.randint(2026, 2035),
            "funding": rng.choice(("credit", "debit"))}},
        "refunds": {"object": "list", "data": refunds, "has_more": False},
        "receipt_url": f"https://pay.example.com/receipts/{_token(rng, 12)}",
    }
    if rng.random() < 0.6:
        # `email` is RFC 5321's, ASCII only (a Unicode local part is `idn-email`): the name folded
        local = unicodedata.normalize("NFKD", name.split()[0].lower()).encode("ascii", "ignore").decode()
        charge["receipt_email"] = rng.choice((None, f"{local or 'buyer'}@example.org"))
    if rng.random() < 0.5:
        charge["shipping"] = rng.choice((None, {"name": name, "address": _address(rng), "carrier": "DHL",
                                                "tracking_number": None}))
    if rng.random() < 0.4:  # an open object: any key, a dotted one too
        charge["metadata"] = {"order_id": f"o-{rng.randrange(10**6)}", "app.version": "4.2"}
    if rng.random() < 0.2:  # a field the schema does not name, in an open object
        charge["outcome"] = {"network_status": "approved_by_network", "risk_score": rng.randint(0, 99)}
    return charge


def good_message(rng: random.Random, day: date) -> dict[str, object]:
    kind = rng.choices(EVENT_TYPES, (60, 10, 15, 15))[0]
    data: dict[str, object] = {"object": _charge(rng, day, kind)}
    if kind == "charge.captured":
        data["previous_attributes"] = {"captured": False}
    message: dict[str, object] = {
        "id": f"evt_{_token(rng)}", "object": "event", "api_version": "2024-06-20",
        "created": _instant(rng, day), "type": kind, "livemode": rng.random() < 0.9,
        "pending_webhooks": rng.randint(0, 3),
        "request": rng.choice((None, {"id": f"req_{_token(rng, 14)}", "idempotency_key": _token(rng, 36)},
                               {"id": None, "idempotency_key": None})),
        "data": data,
    }
    if rng.random() < 0.3:
        del message["pending_webhooks"], message["request"]  # optional
    return message


# ---------------------------------------------------------------- poison
# A maker breaks a good message in place, `variant` rotating through its forms, and returns the
# reasons it must get; a line breaker breaks the line's text (the bytes and parse layers).

C = "data.object"
Maker = Callable[[dict, int, random.Random], Reasons]


_pick = sample._pick
def _set(message: dict, column: str, value: object) -> None:
    *parents, last = column.split(".")
    here = message
    for key in parents:
        here = here[key]
    if value is _GONE:
        del here[last]
    else:
        here[last] = value


_GONE = object()


# The kinds that write one value at one path: each form is (column, the value written there, or
# _GONE to take the field out, and the (keyword, argument) of each reason it gets there).
_FORMS: dict[str, tuple[tuple[str, object, tuple[tuple[str, object], ...]], ...]] = {
    "missing_required": tuple((column, _GONE, (("required", None),)) for column in (
        "id", "created", "data", f"{C}.currency", f"{C}.refunds.has_more",
        f"{C}.billing_details.address.country", f"{C}.payment_method_details.type")),
    "wrong_type": tuple((column, value, (("type", words),)) for column, value, words in (
        ("livemode", "false", "boolean"), (f"{C}.amount", "1500", "integer"), (f"{C}.paid", 1, "boolean"),
        ("data", [], "object"), (f"{C}.refunds.data", {}, "array"),
        (f"{C}.payment_method_details.card", "visa", "object"), (f"{C}.customer", 42, "string,null"))),
    "null_not_allowed": tuple((column, None, (("type", words),)) for column, words in (
        (f"{C}.currency", "string"), (f"{C}.billing_details.address.country", "string"),
        ("livemode", "boolean"), (f"{C}.billing_details", "object"))),
    "fraction_integer": (
        (f"{C}.amount", 1500.5, (("type", "integer"),)), ("pending_webhooks", 1e-3, (("type", "integer"),)),
        (f"{C}.payment_method_details.card.exp_month", 6.5, (("type", "integer"),)),
        (f"{C}.amount", 0.5, (("type", "integer"), ("minimum", 1)))),  # not an integer, and below
    "below_minimum": tuple((column, value, (("minimum", bound),)) for column, value, bound in (
        (f"{C}.amount", 0, 1), (f"{C}.amount", -250, 1), ("pending_webhooks", -1, 0),
        (f"{C}.amount_refunded", -1, 0), (f"{C}.payment_method_details.card.exp_month", 0, 1))),
    "above_maximum": tuple((column, value, (("maximum", bound),)) for column, value, bound in (
        (f"{C}.amount", 100_000_000, 99_999_999), (f"{C}.payment_method_details.card.exp_month", 13, 12),
        (f"{C}.payment_method_details.card.exp_year", 2101, 2100))),
    "unknown_enum": tuple((column, value, (("enum", None),)) for column, value in (
        ("type", "charge.lost"), (f"{C}.status", "done"), ("type", 42),
        (f"{C}.payment_method_details.card.brand", "VISA"), (f"{C}.payment_method_details.type", None))),
    "wrong_const": tuple((column, value, (("const", None),)) for column, value in (
        ("object", "evt"), (f"{C}.object", "payment"), (f"{C}.refunds.object", "array"))),
    "pattern_mismatch": tuple((column, value, (("pattern", None),)) for column, value in (
        ("id", "event_123"), (f"{C}.currency", "USD"), ("api_version", "v2"),
        (f"{C}.payment_method_details.card.last4", "42"), (f"{C}.billing_details.address.country", "Germany"),
        (f"{C}.id", "py_123"))),
    "empty_name": ((f"{C}.billing_details.name", "", (("minLength", 1),)),),
    "too_long": ((f"{C}.description", "é" * 1001, (("maxLength", 1000),)),  # code points, not bytes
                 (f"{C}.billing_details.address.postal_code", "1" * 17, (("maxLength", 16),))),
    "bad_format": tuple((column, value, (("format", form),)) for column, value, form in (
        (f"{C}.receipt_email", "not-an-email", "email"), (f"{C}.receipt_url", "receipts/ch_123", "uri"),
        (f"{C}.billing_details.email", "nobody", "email"),
        (f"{C}.receipt_url", "https://pay.example.com/a b", "uri"))),
}


def _one_value(kind: str) -> Maker:
    def make(m: dict, v: int, _r: random.Random) -> Reasons:
        column, value, reasons = _pick(_FORMS[kind], v)
        _set(m, column, value)
        return frozenset(rule(column, keyword, argument) for keyword, argument in reasons)

    return make


def _refunds(m: dict, r: random.Random, at_least: int = 1) -> list[dict]:
    refunds = m["data"]["object"]["refunds"]["data"]
    while len(refunds) < at_least:
        refunds.append({"id": f"re_{_token(r)}", "amount": 100, "status": "succeeded",
                        "created": 1_764_000_000})
    return refunds


def _refund_not_positive(m: dict, v: int, r: random.Random) -> Reasons:
    refunds = _refunds(m, r)
    i = r.randrange(len(refunds))
    refunds[i]["amount"] = _pick((0, -100), v)
    return frozenset({rule(f"{C}.refunds.data[{i}].amount", "exclusiveMinimum", 0)})


def _too_many_refunds(m: dict, v: int, r: random.Random) -> Reasons:
    _refunds(m, r, 11 + v % 2)
    return frozenset({rule(f"{C}.refunds.data", "maxItems", 10)})


def _too_much_metadata(m: dict, v: int, _r: random.Random) -> Reasons:
    m["data"]["object"]["metadata"] = {f"k{i}": str(i) for i in range(21 + v % 5)}
    return frozenset({rule(f"{C}.metadata", "maxProperties", 20)})


def _closed_address(m: dict, v: int, _r: random.Random) -> Reasons:
    address = f"{C}.billing_details.address"
    keys = _pick((("floor",), ("apt.no",), ("floor", "geo")), v)
    for key in keys:
        m["data"]["object"]["billing_details"]["address"][key] = "3"
    return frozenset(extra(address, key) for key in keys)


def _bad_timestamp(m: dict, v: int, r: random.Random) -> Reasons:
    value = _pick((-1, 1.5, True, "yesterday", "2026-02-30T10:00:00Z", "2026-11-20T10:00:00"), v)
    where = _pick(("created", f"{C}.created", "refund"), v // 6)
    if where == "refund":
        refunds = _refunds(m, r)
        i = r.randrange(len(refunds))
        refunds[i]["created"] = value
        where = f"{C}.refunds.data[{i}].created"
    else:
        _set(m, where, value)
    return frozenset({rule(where, "oneOf")})


def _broken_shipping(m: dict, v: int, _r: random.Random) -> Reasons:
    shipping = {"name": "Bo Li", "address": {"country": "DE"}}
    if v % 3 == 0:
        del shipping["name"]
    elif v % 3 == 1:
        shipping["address"] = {"country": "DE", "planet": "Earth"}  # closed, under the oneOf
    else:
        shipping = "Bo Li, Berlin"  # type: ignore[assignment]
    m["data"]["object"]["shipping"] = shipping
    return frozenset({rule(f"{C}.shipping", "oneOf")})


def _broken_request(m: dict, v: int, _r: random.Random) -> Reasons:
    m["request"] = _pick(({"id": "r-1"}, {"idempotency_key": "k"}, {"id": None, "idempotency_key": "x" * 256},
                          "req_123456789"), v)
    return frozenset({rule("request", "oneOf")})


def _bad_refund(m: dict, v: int, r: random.Random) -> Reasons:
    refunds = _refunds(m, r, 3)
    first, second = sorted(r.sample(range(len(refunds)), 2))
    at = f"{C}.refunds.data"
    if v % 2 == 0:
        del refunds[first]["id"]
        refunds[second] = "re_123"  # type: ignore[call-overload]
        return frozenset({rule(f"{at}[{first}].id", "required"), rule(f"{at}[{second}]", "type", "object")})
    refunds[first]["reason"] = "changed_mind"
    refunds[second]["status"] = None
    return frozenset({rule(f"{at}[{first}].reason", "enum"), rule(f"{at}[{second}].status", "enum")})


def _several_at_once(m: dict, v: int, r: random.Random) -> Reasons:
    reasons: set[Reason] = set()
    for maker in (_MAKERS["pattern_mismatch"], _MAKERS["unknown_enum"], _too_much_metadata):
        reasons |= maker(m, v + 1, r)
    return frozenset(reasons)


_LINE_BREAKERS: dict[str, Callable[[str, int], tuple[str, Reason]]] = {
    "invalid_utf8": lambda text, v: (text.replace('"charge"', '"ch\udcffarge"', 1), ("line.not_utf8", None)),
    "nul_byte": lambda text, v: (text.replace('"charge"', '"ch\x00arge"', 1), ("line.nul_byte", None)),
    "truncated_json": lambda text, v: (text[: len(text) // (2 + v % 3)], ("json.invalid", None)),
    "nan": lambda text, v: (text.replace('"livemode":', '"livemode":NaN,"x":', 1), ("json.invalid", None)),
    "top_level_array": lambda text, v: (f"[{text}]", ("json.not_object", None)),
}
_MAKERS: dict[str, Maker] = {name: _one_value(name) if name in _FORMS else globals()[f"_{name}"]
                             for name in POISON_KINDS if name not in _LINE_BREAKERS}


# ---------------------------------------------------------------- the batch


def generate_payments(out_dir: str | FilePath, *, messages: int = 1000, seed: int = 7,
                      poison_rate: float = 0.05, batch_date: str = "2026-11-20", files: int = 2,
                      gzip_files: int = 0, kinds: Sequence[str] | None = None,
                      keep_truth: bool = True) -> SampleBatch:
    """Write `messages` charge events over `files` files in out_dir (the last `gzip_files`
    compressed) and return each line's kind, expected outcome and reasons. The same arguments
    give the same bytes; each requested kind appears at least once when messages >= 4 * kinds."""
    day = date.fromisoformat(batch_date)
    wanted = sample.checked_kinds(kinds, POISON_KINDS, messages, files, gzip_files, poison_rate)
    rng = random.Random(seed)
    bounds = [i * messages // files for i in range(files + 1)]
    plan = sample._place(sample._units(messages, poison_rate, wanted, rng), bounds, rng)
    labels = {n: kind for n, (kind, _) in plan.items()}
    reasons: dict[int, Reasons] = {}

    def line(n: int) -> str:
        kind, variant = plan.get(n, ("good", 0))
        text, reasons[n] = _line(rng, day, kind, variant)
        return text

    def line_truth(name: str, number: int, n: int) -> EventTruth:
        kind = labels.get(n, "good")
        return EventTruth(name, number, kind, sample._expected(kind), reasons.pop(n))

    paths, truth = sample.write_files(FilePath(out_dir), f"{DATASET}-{day.isoformat()}", bounds, gzip_files,
                                      line, line_truth if keep_truth else None)
    return SampleBatch(files=paths, truth=truth, messages=messages,
                       outcomes=sample.counted_outcomes(labels, messages, sample._expected))


def _line(rng: random.Random, day: date, kind: str, variant: int) -> tuple[str, Reasons]:
    message = good_message(rng, day)
    style = rng.random() < 0.25  # one line in four from the second producer: other order, other spacing
    maker = _MAKERS.get(kind)
    reasons = maker(message, variant, rng) if maker else NO_REASONS
    if style:
        message = dict(reversed(message.items()))
    text = json.dumps(message, ensure_ascii=False, separators=_SEPARATORS[style])
    if kind in _LINE_BREAKERS:
        text, reason = _LINE_BREAKERS[kind](text, variant)
        reasons = frozenset({reason})
    return text + "\n", reasons
