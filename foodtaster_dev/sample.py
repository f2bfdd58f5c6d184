"""Write sample `orders` batches (JSON lines) with a chosen size, seed and poison mix.

Every line comes with its truth: which poison kind it is and whether the pipeline
must keep it, quarantine it or drop it as a redelivery. Tests and demos can then
hold the engine to an exact answer instead of eyeballing counts.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import TypeVar

POISON_KINDS: tuple[str, ...] = (
    # bytes layer
    "invalid_utf8", "nul_byte", "oversized", "empty_line",
    # parse layer
    "truncated_json", "single_quotes", "nan", "trailing_comma", "top_level_array",
    "concatenated",
    # contract layer
    "missing_field", "wrong_type_amount", "float_items", "null_required", "out_of_range",
    "edge_number", "unknown_enum", "bad_timestamp", "bad_message_id", "cross_field", "multi_fail",
    "html_payload", "conflicting_duplicate",
    # not poison, but not a new message either: dropped, counted
    "redelivery",
)

VALID = "valid"
QUARANTINED = "quarantined"
DUPLICATE_DROPPED = "duplicate_dropped"
MAX_OVERSIZED = 2  # each is over a MiB by default: enough to test the rule, not to bloat a batch
_CHUNK = 65536  # lines joined and written at once

CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF")
STATUSES = ("CREATED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED")
_PAID = ("PAID", "SHIPPED", "DELIVERED")  # the statuses that require amount > 0

# Two producers, two ways of writing JSON: compact with one key order, and
# json.dumps' default spacing with another. The engine must not care.
_PRODUCERS = ("checkout-svc", "fulfilment-svc")
_SEPARATORS = ((",", ":"), (", ", ": "))
# One order a message (`o-<day>-<seed>-<n>`, unique across days): orders is a conversation
# dataset, and a shared order would hold good messages behind a poison one, which is what
# `generate_second_chances` makes on purpose, not this.
_TEMPLATES = (
    '{{"message_id":"m-{0}-{1}","order_id":"o-{2}{1}","customer_id":"c-{3:05d}",{4},'
    '"created_at":"{5}",{6}}}\n',
    '{{"order_id": "o-{2}{1}", "message_id": "m-{0}-{1}", "created_at": "{5}", {4}, '
    '"customer_id": "c-{3:05d}", {6}}}\n',
)
_EXTRAS: tuple[dict[str, object], ...] = (
    {"channel": "web"},
    {"channel": "mobile"},
    {"coupon": "WINTER10"},
    {"schema_version": 2},
    {"tags": ["gift", "express"]},
    {"meta": {"ip_country": "DE", "attempt": 1}},
    {"note": "café ☕ 🎁"},  # valid multi-byte UTF-8 must pass the bytes layer
)

T = TypeVar("T")
_dumps = partial(json.dumps, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class LineTruth:
    """What the generator knows about one line it wrote: the answer key for the engine."""

    file: str  # basename inside out_dir
    line: int  # 1-based line number in that file
    kind: str  # "good", a poison kind, "redelivery" or "resent"
    expected: str  # "valid" | "quarantined" | "duplicate_dropped"


@dataclass
class SampleBatch:
    """The files of one generated batch and, unless turned off, the truth of every line."""

    files: list[str]
    truth: list[LineTruth]
    messages: int
    outcomes: dict[str, int] = field(default_factory=dict)  # kept even without truth

    def counts(self) -> dict[str, int]:
        """Expected outcome -> lines: what `landed = valid + quarantined + dropped` must give."""
        return dict(self.outcomes)


def _expected(kind: str) -> str:
    if kind == "good":
        return VALID
    return DUPLICATE_DROPPED if kind == "redelivery" else QUARANTINED


# ---------------------------------------------------------------- good lines


def _timestamps(rng: random.Random, day: date, size: int) -> list[str]:
    """created_at values: mostly `Z` with millis inside the batch date, some offsets
    (whose local date may differ: the instant is what counts), a few late arrivals."""
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    hour_weights = [1, 1, 1, 1, 1, 2, 3, 5, 7, 8, 8, 9, 10, 9, 8, 8, 8, 9, 10, 10, 9, 7, 4, 2]
    zones = [timezone(timedelta(hours=h, minutes=m)) for h, m in
             ((1, 0), (2, 0), (-5, 0), (5, 30), (-8, 0), (9, 0), (0, 0))]
    values = []
    for hour in rng.choices(range(24), hour_weights, k=size):
        instant = start + timedelta(hours=hour, seconds=rng.randrange(3600),
                                    microseconds=rng.randrange(1_000_000))
        form = rng.random()
        if form < 0.02:  # late arrival from the day before
            instant -= timedelta(days=1)
        if form < 0.82:
            text = instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        elif form < 0.89:
            text = instant.isoformat(timespec="seconds").replace("+00:00", "Z")
        elif form < 0.92:
            text = instant.isoformat(timespec="microseconds").replace("+00:00", "Z")
        else:
            text = instant.astimezone(rng.choice(zones)).isoformat(timespec="milliseconds")
        values.append(text)
    return values


def _money(rng: random.Random, size: int, separators: tuple[str, str]) -> list[str]:
    """`"amount":..,"currency":..,"status":..` fragments: lognormal amounts around 50
    (yen around 5000), mostly with cents, zero only where the contract allows it."""
    fragments = []
    for _ in range(size):
        currency = rng.choices(CURRENCIES, (40, 30, 15, 8, 7))[0]
        status = rng.choices(STATUSES, (30, 30, 15, 15, 10))[0]
        amount: float | int = min(rng.lognormvariate(math.log(50), 1.0), 999_999.0)
        if currency == "JPY":
            amount = min(round(amount * 100), 1_000_000)
        elif rng.random() < 0.6:
            amount = max(round(amount, 2), 0.01)
        else:
            amount = max(round(amount), 1)
        if status not in _PAID and rng.random() < 0.03:
            amount = 0
        record = {"amount": amount, "currency": currency, "status": status}
        fragments.append(json.dumps(record, ensure_ascii=False, separators=separators)[1:-1])
    # the edges of the contract are valid too
    fragments[0] = json.dumps({"amount": 1_000_000, "currency": "USD", "status": "PAID"},
                              separators=separators)[1:-1]
    fragments[1] = json.dumps({"amount": 0.01, "currency": "EUR", "status": "DELIVERED"},
                              separators=separators)[1:-1]
    return fragments


def _rest(rng: random.Random, size: int, style: int) -> list[str]:
    """`"items":..` plus the optional producer (sometimes absent or null) and sometimes
    an extra field, which the contract allows."""
    fragments = []
    for _ in range(size):
        items = rng.choices((1, 2, 3, 4, 5, rng.randint(6, 50)), (40, 25, 12, 8, 5, 10))[0]
        record: dict[str, object] = {"items": items}
        form = rng.random()
        if form < 0.94:
            record["producer"] = _PRODUCERS[style]
        elif form < 0.96:
            record["producer"] = None
        if rng.random() < 0.15:
            record.update(rng.choice(_EXTRAS))
        fragments.append(json.dumps(record, ensure_ascii=False, separators=_SEPARATORS[style])[1:-1])
    fragments[0] = json.dumps({"items": 1000}, separators=_SEPARATORS[style])[1:-1]
    return fragments


def _good_lines(rng: random.Random, seed: int, day: date) -> Callable[[int], str]:
    """A function n -> the good line with message_id `m-<seed>-<n>`.

    Lines are assembled from precomputed pools of fragments with one format call
    and one random draw each, which is what makes millions of lines cheap."""
    times = _timestamps(rng, day, 1 << 16)
    money = [_money(rng, 1 << 14, _SEPARATORS[s]) for s in (0, 1)]
    rest = [_rest(rng, 1 << 12, s) for s in (0, 1)]
    formats = [template.format for template in _TEMPLATES]
    bits = rng.getrandbits
    order_prefix = f"{day:%Y%m%d}-{seed}-"

    def good(n: int) -> str:
        r = bits(84)
        style = (r & 3) == 0  # one line in four comes from the fulfilment service
        return formats[style](
            seed, n, order_prefix, (r >> 22) & 0xFFFF, money[style][(r >> 38) & 0x3FFF],
            times[(r >> 52) & 0xFFFF], rest[style][(r >> 68) & 0xFFF],
        )

    return good


# ---------------------------------------------------------------- poison lines
# Each maker takes a valid record (message_id `p-<seed>-<n>`), which instance of
# its kind this is (to rotate through variants) and the rng; it returns the line
# without its newline. A str holds invalid bytes as surrogate escapes.


def _pick(options: Sequence[T], variant: int) -> T:
    """Rotate through a kind's variants, so a batch with several of a kind has each."""
    return options[variant % len(options)]


def _invalid_utf8(rec: dict, variant: int, _rng: random.Random) -> str:
    column, bad = _pick((
        ("customer_id", b"\xff\xfe"),
        ("producer", b"\xc3\x28"),  # a lead byte followed by ASCII
        ("order_id", b"\xe2\x82"),  # a 3-byte sequence cut short
        ("customer_id", b"\xed\xa0\x80"),  # an encoded surrogate
        ("customer_id", b"\xc0\xaf"),  # an overlong encoding of '/'
    ), variant)
    rec[column] = f"{rec.get(column) or 'x'}{bad.decode('utf-8', 'surrogateescape')}"
    return _dumps(rec)


def _nul_byte(rec: dict, variant: int, _rng: random.Random) -> str:
    column = _pick(("customer_id", "order_id", "producer"), variant)
    rec[column] = f"{rec.get(column) or 'x'}\x00z"
    return _dumps(rec).replace("\\u0000", "\x00")  # raw, not the escape json writes


def _truncated_json(rec: dict, _variant: int, rng: random.Random) -> str:
    text = _dumps(rec)
    return text[: rng.randrange(len(text) // 3, len(text) - 1)]


def _single_quotes(rec: dict, _variant: int, _rng: random.Random) -> str:
    return repr(rec)


def _nan(rec: dict, _variant: int, _rng: random.Random) -> str:
    rec["amount"] = math.nan
    return _dumps(rec)


def _trailing_comma(rec: dict, variant: int, _rng: random.Random) -> str:
    if variant % 2:
        rec["tags"] = ["gift", "express"]
        return _dumps(rec).replace('"express"]', '"express",]')
    return _dumps(rec)[:-1] + ",}"


def _top_level_array(rec: dict, _variant: int, _rng: random.Random) -> str:
    return f"[{_dumps(rec)}]"


def _concatenated(rec: dict, _variant: int, _rng: random.Random) -> str:
    return _dumps(rec) + _dumps({**rec, "message_id": rec["message_id"] + "-b"})


_REQUIRED = ("amount", "currency", "created_at", "items", "status", "customer_id", "order_id",
             "message_id")


def _not_paid(rec: dict) -> None:
    """Keep the cross-field rule out of it when the poison is about the amount."""
    if rec["status"] in _PAID:
        rec["status"] = "CREATED"


def _missing_field(rec: dict, variant: int, _rng: random.Random) -> str:
    column = _pick(_REQUIRED, variant)
    if column == "amount":
        _not_paid(rec)
    del rec[column]
    return _dumps(rec)


def _wrong_type_amount(rec: dict, variant: int, _rng: random.Random) -> str:
    _not_paid(rec)
    rec["amount"] = _pick(("12.5", str(rec["amount"])), variant)
    return _dumps(rec)


def _float_items(rec: dict, _variant: int, _rng: random.Random) -> str:
    rec["items"] = 2.0
    return _dumps(rec)


def _null_required(rec: dict, variant: int, _rng: random.Random) -> str:
    column = _pick(("currency", *(c for c in _REQUIRED if c != "currency")), variant)
    if column == "amount":
        _not_paid(rec)
    rec[column] = None
    return _dumps(rec)


def _out_of_range(rec: dict, variant: int, _rng: random.Random) -> str:
    column, value = _pick((("amount", -5), ("items", 0), ("items", 5000),
                           ("amount", 1_000_000.01)), variant)
    if value == -5:
        _not_paid(rec)
    rec[column] = value
    return _dumps(rec)


# Valid JSON numbers that the typed column cannot hold (issue 9): beyond a double, underflowing
# to zero, beyond 64 bits for the integer field, a long digit string.
EDGE_NUMBERS = (("amount", "1e400"), ("items", "9223372036854775808"), ("amount", "1e-400"),
                ("items", "-" + "9" * 40), ("amount", "1" + "0" * 400), ("amount", "-1E309"))


def _edge_number(rec: dict, variant: int, _rng: random.Random) -> str:
    column, literal = _pick(EDGE_NUMBERS, variant)
    if column == "amount":
        _not_paid(rec)
    rec[column] = 0  # a placeholder json.dumps can write; the literal replaces it
    text = _dumps(rec)
    placeholder = f'"{column}":0'
    return text.replace(placeholder, f'"{column}":{literal}', 1)


def _unknown_enum(rec: dict, variant: int, _rng: random.Random) -> str:
    column, value = _pick((("currency", "XYZ"), ("status", "LOST"), ("currency", "usd")), variant)
    rec[column] = value
    return _dumps(rec)


def _bad_timestamp(rec: dict, variant: int, _rng: random.Random) -> str:
    day = rec["created_at"][:10]
    rec["created_at"] = _pick((
        f"{day[:4]}-13-45T99:00:00Z",
        "yesterday",
        f"{day}T10:00:00",  # no zone
        f"{day} 10:00:00Z",  # no T
        f"{day[:4]}-02-30T10:00:00Z",  # the right shape, not a date
    ), variant)
    return _dumps(rec)


def _bad_message_id(rec: dict, variant: int, _rng: random.Random) -> str:
    ident = rec["message_id"]
    rec["message_id"] = _pick((
        ident.replace("-", " ", 1),
        (ident + "-").ljust(70, "x"),
        ident + "/x",
        ident + "é",
    ), variant)
    return _dumps(rec)


def _cross_field(rec: dict, variant: int, _rng: random.Random) -> str:
    rec["status"] = _pick(_PAID, variant)
    rec["amount"] = _pick((0, 0.0), variant // len(_PAID))
    return _dumps(rec)


def _multi_fail(rec: dict, _variant: int, _rng: random.Random) -> str:
    rec.update(amount=-5, currency="XYZ", items=0, created_at="yesterday")
    return _dumps(rec)


def _html_payload(rec: dict, _variant: int, _rng: random.Random) -> str:
    rec.update(customer_id="<script>alert(1)</script>", currency="<img src=x onerror=alert(2)>")
    return _dumps(rec)


_MAKERS: dict[str, Callable[[dict, int, random.Random], str]] = {
    "invalid_utf8": _invalid_utf8, "nul_byte": _nul_byte, "truncated_json": _truncated_json,
    "single_quotes": _single_quotes, "nan": _nan, "trailing_comma": _trailing_comma,
    "top_level_array": _top_level_array, "concatenated": _concatenated,
    "missing_field": _missing_field, "wrong_type_amount": _wrong_type_amount,
    "float_items": _float_items, "null_required": _null_required, "out_of_range": _out_of_range,
    "edge_number": _edge_number,
    "unknown_enum": _unknown_enum, "bad_timestamp": _bad_timestamp,
    "bad_message_id": _bad_message_id, "cross_field": _cross_field, "multi_fail": _multi_fail,
    "html_payload": _html_payload,
}


def _oversized(rec: dict, variant: int, max_message_bytes: int) -> str:
    """Valid JSON, valid contract, too long: the first is one byte over the limit."""
    base = len(_dumps({**rec, "blob": ""}).encode())
    target = max_message_bytes + 1 + variant * 65536
    return _dumps({**rec, "blob": "x" * max(target - base, 0)})


# ---------------------------------------------------------------- the plan


def _units(messages: int, poison_rate: float, kinds: Sequence[str],
           rng: random.Random) -> dict[str, int]:
    """How many of each kind: about poison_rate of the lines, round robin over the
    kinds, at least one each when there is room, never more lines than `messages`
    (a redelivery also needs a good line to copy)."""
    units = dict.fromkeys(kinds, 0)
    width = {k: 2 if k == "conflicting_duplicate" else 1 for k in kinds}
    lines = sources = 0

    def add(kind: str) -> bool:
        nonlocal lines, sources
        extra = int(kind == "redelivery")
        if kind == "oversized" and units[kind] >= MAX_OVERSIZED:
            return False
        if lines + width[kind] + sources + extra > messages:
            return False
        units[kind] += 1
        lines += width[kind]
        sources += extra
        return True

    if messages >= 4 * len(kinds):
        for kind in kinds:
            add(kind)
    target = round(messages * poison_rate)
    order = list(kinds)
    rng.shuffle(order)
    progress = True
    while lines < target and progress:
        progress = False
        for kind in order:
            if lines >= target:
                break
            progress = add(kind) or progress
    return units


def _place(units: dict[str, int], bounds: list[int],
           rng: random.Random) -> dict[int, tuple[str, int]]:
    """Line index -> (kind, instance). Redelivery copies come after their source
    ("source", instance); empty lines go inside a file, not at its ends."""
    total = bounds[-1]
    plan: dict[int, tuple[str, int]] = {}
    edges = {0, *bounds[1:-1], *(b - 1 for b in bounds[1:])}  # first and last lines

    def free(lo: int, hi: int, inside: bool = False) -> int | None:
        def ok(n: int) -> bool:
            return n not in plan and not (inside and n in edges)

        for _ in range(64 if lo < hi else 0):
            n = rng.randrange(lo, hi)
            if ok(n):
                return n
        return next(filter(ok, range(lo, hi)), None)  # crowded: the first free line will do

    for i in range(units.get("empty_line", 0)):
        n = free(0, total, inside=True)
        plan[n if n is not None else free(0, total)] = ("empty_line", i)
    for i in range(units.get("redelivery", 0)):
        source = free(0, total)
        copy = free(source + 1, total)
        if copy is None:  # the source took the last free line: look before it
            source, copy = free(0, source), source
        plan[source] = ("source", i)
        plan[copy] = ("redelivery", i)
    for i in range(units.get("conflicting_duplicate", 0)):
        plan[free(0, total)] = ("conflicting_duplicate", 2 * i)
        plan[free(0, total)] = ("conflicting_duplicate", 2 * i + 1)
    for kind, count in units.items():
        if kind not in ("empty_line", "redelivery", "conflicting_duplicate"):
            for i in range(count):
                plan[free(0, total)] = (kind, i)
    return plan


# ---------------------------------------------------------------- the batch


def generate_batch(out_dir: str | Path, *, messages: int = 1000, seed: int = 7,
                   poison_rate: float = 0.05, batch_date: str = "2026-11-20",
                   files: int = 3, gzip_files: int = 1,
                   kinds: Sequence[str] | None = None,
                   max_message_bytes: int = 1048576,
                   keep_truth: bool = True, resend: Sequence[bytes] = ()) -> SampleBatch:
    """Write `messages` lines over `files` files in out_dir (the last `gzip_files` of
    them gzip-compressed) and return what each line is.

    `resend`: lines a producer sends again (say, poison messages of an earlier day), each
    in place of one good line, spread over the batch (kind `resent`, expected quarantined:
    they are poison, or listed). Every other line is as without them.

    The same arguments give byte-identical files. About `poison_rate` of the lines
    are poison, spread over `kinds` (default: all of POISON_KINDS); each requested
    kind appears at least once when messages >= 4 * len(kinds), `oversized` at most
    twice. keep_truth=False skips the per-line truth (millions of lines).
    """
    day = date.fromisoformat(batch_date)
    wanted = checked_kinds(kinds, POISON_KINDS, messages, files, gzip_files, poison_rate)
    if max_message_bytes < 1:
        raise ValueError(f"max_message_bytes must be positive, got {max_message_bytes}")

    rng = random.Random(seed)
    bounds = [i * messages // files for i in range(files + 1)]
    plan = _place(_units(messages, poison_rate, wanted, rng), bounds, rng)
    labels = {n: ("good" if kind == "source" else kind) for n, (kind, _) in plan.items()}
    resent = _resent_places(resend, plan, messages)
    labels.update(dict.fromkeys(resent, "resent"))
    good = _good_lines(rng, seed, day)
    sources: dict[int, str] = {}  # redelivery instance -> the exact line to copy
    pairs: dict[int, dict] = {}  # conflicting pair -> the record its twin will change

    def special(n: int) -> str:
        kind, instance = plan[n]
        if kind == "source":
            sources[instance] = good(n)
            return sources[instance]
        if kind == "redelivery":
            return sources.pop(instance)
        if kind == "empty_line":
            return "\n"
        rec = json.loads(good(n))
        rec["message_id"] = f"p-{seed}-{n}"
        if kind == "conflicting_duplicate":  # a pair: same id, the amount changed
            twin = pairs.pop(instance // 2, None)
            if twin is None:
                rec["message_id"] = f"dup-{seed}-{instance // 2}"
                pairs[instance // 2] = rec
            else:
                rec = twin
                amount = rec["amount"]
                rec["amount"] = round(amount + 10.5 if amount < 500_000 else amount - 10.5, 2)
            return _dumps(rec) + "\n"
        if kind == "oversized":
            return _oversized(rec, instance, max_message_bytes) + "\n"
        return _MAKERS[kind](rec, instance, rng) + "\n"

    def line(n: int) -> str:
        drawn = special(n) if n in plan else good(n)
        # Drawn and then replaced: the random stream, so every other line, stays the same.
        return resent.get(n, drawn)

    def line_truth(name: str, number: int, n: int) -> LineTruth:
        kind = labels.get(n, "good")
        return LineTruth(name, number, kind, _expected(kind))

    paths, truth = write_files(Path(out_dir), f"orders-{day.isoformat()}", bounds, gzip_files, line,
                               line_truth if keep_truth else None)
    return SampleBatch(files=paths, truth=truth, messages=messages,
                       outcomes=counted_outcomes(labels, messages, _expected))


def checked_kinds(kinds: Sequence[str] | None, known: Sequence[str], messages: int, files: int,
                  gzip_files: int, poison_rate: float) -> list[str]:
    """The poison kinds a generator is asked for (default: every kind it `known`s), once each,
    after checking them and the batch's shape; a ValueError says what is wrong."""
    wanted = list(dict.fromkeys(known if kinds is None else kinds))
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise ValueError(f"unknown poison kinds {unknown}; known: {', '.join(known)}")
    if not 1 <= files <= messages:
        raise ValueError(f"need 1 <= files <= messages, got files={files} messages={messages}")
    if not 0 <= gzip_files <= files:
        raise ValueError(f"need 0 <= gzip_files <= files, got {gzip_files}")
    if not 0.0 <= poison_rate <= 1.0:
        raise ValueError(f"poison_rate must be within [0, 1], got {poison_rate}")
    return wanted


def write_files(out: Path, prefix: str, bounds: list[int], gzip_files: int, line: Callable[[int], str],
                truth: Callable[[str, int, int], T] | None) -> tuple[list[str], list[T]]:
    """Write lines `bounds[0]`..`bounds[-1]` (`line(n)`, drawn in order) over the files
    `<prefix>-part-NNNN.jsonl` of `out`, file i holding bounds[i]..bounds[i + 1], the last
    `gzip_files` of them gzip-compressed, byte-identical for the same lines (no name, no time
    in the gzip header); with `truth`, a record a line (file name, 1-based line, n), drawn
    after its chunk's lines. Returns the files' paths and the records."""
    out.mkdir(parents=True, exist_ok=True)
    paths: list[str] = []
    records: list[T] = []
    files = len(bounds) - 1
    for i in range(files):
        compressed = i >= files - gzip_files
        name = f"{prefix}-part-{i:04d}.jsonl" + (".gz" if compressed else "")
        path = out / name
        paths.append(str(path.resolve()))
        with open(path, "wb") as raw, (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0)
            if compressed else raw
        ) as sink:
            for lo in range(bounds[i], bounds[i + 1], _CHUNK):
                hi = min(lo + _CHUNK, bounds[i + 1])
                sink.write("".join(line(n) for n in range(lo, hi)).encode("utf-8", "surrogateescape"))
                if truth is not None:
                    records.extend(truth(name, n - bounds[i] + 1, n) for n in range(lo, hi))
    return paths, records


def counted_outcomes(labels: dict[int, str], messages: int, expected: Callable[[str], str]) -> dict[str, int]:
    """How many lines of each expected outcome: the labelled ones by their kind, the rest valid."""
    outcomes = dict.fromkeys((VALID, QUARANTINED, DUPLICATE_DROPPED), 0)
    outcomes.update(Counter(expected(kind) for kind in labels.values()))
    outcomes[VALID] += messages - len(labels)
    return outcomes


def _resent_places(resend: Sequence[bytes], plan: dict, messages: int) -> dict[int, str]:
    """Line index -> resent line: evenly spread, each on the next line the plan leaves good."""
    if len(resend) + len(plan) > messages:
        raise ValueError(f"{len(resend)} resent lines do not fit among {messages - len(plan)} good lines")
    places: dict[int, str] = {}
    for i, line in enumerate(resend):
        if b"\n" in line or b"\r" in line:
            raise ValueError(f"resent line {i} holds a line break: give lines without their endings")
        n = (i + 1) * messages // (len(resend) + 1)
        while n in plan or n in places:
            n = (n + 1) % messages
        places[n] = line.decode("utf-8", "surrogateescape") + "\n"
    return places


def read_lines(path: str | Path) -> list[bytes]:
    """A generated file's lines without their endings (gunzipped when it ends in .gz)."""
    data = Path(path).read_bytes()
    return (gzip.decompress(data) if str(path).endswith(".gz") else data).split(b"\n")[:-1]


def write_truth(truth: Sequence[LineTruth], path: str | Path) -> None:
    """The truth as JSON lines, so a test in another process can check the engine."""
    names: dict[str, str] = {}  # file -> its JSON string, encoded once, not per line
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(
            f'{{"file": {names.get(t.file) or names.setdefault(t.file, json.dumps(t.file))}, '
            f'"line": {t.line}, "kind": "{t.kind}", "expected": "{t.expected}"}}\n'
            for t in truth
        )


# ---------------------------------------------------------------- second chances
# Orders and the customers they reference, over several days: some customers land a day
# or two after their first order (the orders wait as `retrying`), some orders are
# conversations whose first message is poison (the later ones are held for their group).

SECOND_CHANCE_OUTCOMES = ("valid", "retrying", "held", "quarantined")


@dataclass(frozen=True, slots=True)
class OrderTruth:
    """One order message of `generate_second_chances` and what must become of it."""

    message_id: str
    order_id: str
    day: str  # the inbox date it lands in
    customer_day: str | None  # when its customer lands; None: never, within the days
    expected: str  # on its own day's run: one of SECOND_CHANCE_OUTCOMES


@dataclass
class SecondChances:
    orders: list[OrderTruth]
    customers: dict[str, int]  # day -> customers landed that day

    def expected(self, day: str) -> dict[str, int]:
        """Outcome -> orders of `day`'s batch, on its own run (customers of that day published first)."""
        return dict(Counter(o.expected for o in self.orders if o.day == day))


def _customer_record(customer: int, day: date, rng: random.Random) -> dict[str, object]:
    return {"message_id": f"cu-{customer:05d}", "customer_id": f"c-{customer:05d}",
            "name": f"Customer {customer}", "email": f"customer{customer}@example.com",
            "tier": rng.choice(("standard", "plus", "business")),
            "created_at": f"{day.isoformat()}T08:00:00.000Z"}


def _order_record(message_id: str, order: str, customer: int, status: str, at: datetime,
                  currency: str) -> dict[str, object]:
    return {"message_id": message_id, "order_id": order, "customer_id": f"c-{customer:05d}",
            "amount": 25.5, "currency": currency, "status": status,
            "created_at": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "items": 1,
            "producer": "checkout-svc"}


def _write_lines(folder: Path, name: str, records: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(_dumps(r) + "\n" for r in records), encoding="utf-8")


def generate_second_chances(inbox: str | Path, days: Sequence[str], *, orders_per_day: int = 30,
                            late_share: float = 0.2, poisoned_share: float = 0.1,
                            seed: int = 5) -> SecondChances:
    """Write `inbox/orders/dt=<day>/` and `inbox/customers/dt=<day>/` for each day.

    Each order is a conversation: CREATED, then PAID an hour later, and for one in three
    SHIPPED the next day (in the next day's batch). About `late_share` of the orders have a
    customer who lands one or two days after the order (past the last day: never);
    about `poisoned_share` have a CREATED in an unknown currency, which holds the rest of
    the conversation. Every other customer lands on the order's day.
    """
    rng = random.Random(seed)
    dates = [date.fromisoformat(d) for d in days]
    orders: dict[str, list[dict[str, object]]] = {d: [] for d in days}
    customers: dict[str, list[dict[str, object]]] = {d: [] for d in days}
    truth: list[OrderTruth] = []
    customer = 0
    for index, day in enumerate(dates):
        for n in range(orders_per_day):
            customer += 1
            draw = rng.random()
            late = rng.choice((1, 2)) if draw < late_share else 0
            poisoned = late_share <= draw < late_share + poisoned_share
            arrives = dates[index + late] if index + late < len(dates) else None
            if arrives is not None:
                customers[arrives.isoformat()].append(_customer_record(customer, arrives, rng))
            order = f"o-{day:%Y%m%d}-{n:04d}"
            start = datetime(day.year, day.month, day.day, 9, tzinfo=UTC) + timedelta(minutes=n)
            steps = [("CREATED", start, day), ("PAID", start + timedelta(hours=1), day)]
            if n % 3 == 0 and index + 1 < len(dates):
                steps.append(("SHIPPED", start + timedelta(days=1), dates[index + 1]))
            for step, (status, at, lands) in enumerate(steps):
                message_id = f"sc-{order}-{step}"
                currency = "XXX" if poisoned and step == 0 else "EUR"
                orders[lands.isoformat()].append(
                    _order_record(message_id, order, customer, status, at, currency))
                waiting = arrives is None or arrives > lands
                if poisoned:
                    expected = "quarantined" if step == 0 else "held"
                elif waiting:
                    expected = "retrying"
                else:  # an earlier message still retrying holds the group
                    expected = "held" if arrives > day else "valid"
                truth.append(OrderTruth(message_id, order, lands.isoformat(),
                                        arrives.isoformat() if arrives else None, expected))
    root = Path(inbox)
    for d in days:
        _write_lines(root / "orders" / f"dt={d}", f"orders-{d}.jsonl", orders[d])
        if customers[d]:
            _write_lines(root / "customers" / f"dt={d}", f"customers-{d}.jsonl", customers[d])
    return SecondChances(truth, {d: len(customers[d]) for d in days})
