"""Write sample `shipments` batches: a carrier's parcel scans (JSON lines), judged by the ODCS
data contract `contracts/shipments.odcs.yaml`, each line with the exact reasons the engine must
give it.

A parcel is its carrier and tracking number (the contract's primary key of two properties):
every good line scans another parcel, a `redelivery` sends a line again byte for byte (dropped
as a duplicate), a `conflicting_duplicate` pair scans one parcel with two weights (both
quarantined under the key). Each other poison kind breaks one rule the document states: a
property's enum, pattern, bound, `required` or `minItems`, the property-level quality rule
(`invalidValues`), at the top or inside `recipient`. Planning and placement are the flat
generator's (`foodtaster_dev.sample`), the truth record `sample_events`'.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta
from pathlib import Path as FilePath

from foodtaster_dev import sample
from foodtaster_dev.sample import SampleBatch
from foodtaster_dev.sample_events import NO_REASONS, EventTruth, Reason, Reasons

DATASET = "shipments"
CONTRACT = FilePath(__file__).resolve().parent.parent / "contracts" / f"{DATASET}.odcs.yaml"
KEY = "(carrier,tracking_no)"
CARRIERS = ("DHL", "UPS", "FEDEX", "POST")
STATUSES = ("LABEL_CREATED", "IN_TRANSIT", "OUT_FOR_DELIVERY", "DELIVERED", "RETURNED")
_PLACES = (("Ada Lovelace", "10115", "DE"), ("Bo Li", "75002", "FR"), ("Zoë Martin", "8001", "CH"),
           ("Jun Sato", "100-0001", "JP"), ("Dara O'Neil", "NW1 6XE", "GB"))

# The rule ids the ODCS front-end gives (`foodtaster.contract.odcs`, named as pandera's checks: a
# pattern is `str_contains`, found anywhere as ECMA-262 reads it; `minItems` bounds the length).
_Maker = Callable[[dict[str, object]], Reason]
_MAKERS: dict[str, _Maker] = {
    "unknown_carrier": lambda m: _set(m, "carrier", "DPD", "carrier.isin"),
    "bad_tracking_no": lambda m: _set(m, "tracking_no", "1z-99", "tracking_no.str_contains"),
    "missing_scanned_at": lambda m: _set(m, "scanned_at", None, "scanned_at.required"),
    "unknown_status": lambda m: _set(m, "status", "LOST", "status.isin"),
    "zero_weight": lambda m: _set(m, "weight_g", 0, "weight_g.greater_than(0)"),
    "too_heavy": lambda m: _set(m, "weight_g", 70001, "weight_g.less_than_or_equal_to(70000)"),
    "bad_country": lambda m: _set(m, "recipient.country", "Germany", "recipient.country.str_contains"),
    "no_events": lambda m: _set(m, "events", [], "events.greater_than_or_equal_to(1)"),
}
POISON_KINDS: tuple[str, ...] = ("truncated_json", *_MAKERS, "redelivery", "conflicting_duplicate")


def _set(message: dict[str, object], column: str, value: object, rule: str) -> Reason:
    """Put `value` at `column` (None: take the property away) and say the reason it gets."""
    *outer, name = column.split(".")
    at: dict = message
    for step in outer:
        at = at[step]  # type: ignore[assignment]
    if value is None:
        del at[name]
    else:
        at[name] = value
    return rule, column


def good_message(rng: random.Random, day: date, parcel: int, weight: int | None = None) -> dict[str, object]:
    """A scan of parcel number `parcel` of the day: a tracking number no other parcel has."""
    carrier = CARRIERS[parcel % len(CARRIERS)]
    at = datetime.combine(day, time()) + timedelta(seconds=rng.randrange(86_400))
    name, postcode, country = rng.choice(_PLACES)
    return {
        "carrier": carrier, "tracking_no": f"{carrier[0]}{day:%y%m%d}{parcel:08d}",
        "scanned_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "status": rng.choice(STATUSES),
        "weight_g": weight or rng.randrange(50, 30_000),
        "recipient": {"name": name, "postcode": postcode, "country": country},
        "events": [{"code": "PICKUP", "at": (at - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")}],
    }


def generate_shipments(out_dir: str | FilePath, *, messages: int = 100, seed: int = 7,
                       poison_rate: float = 0.1, batch_date: str = "2026-11-20", files: int = 1,
                       gzip_files: int = 0, kinds: Sequence[str] | None = None) -> SampleBatch:
    """Write `messages` scans over `files` files in out_dir and return each line's kind, expected
    outcome and reasons. The same arguments give the same bytes; each requested kind appears at
    least once when there is room (`sample._units`)."""
    day = date.fromisoformat(batch_date)
    wanted = sample.checked_kinds(kinds, POISON_KINDS, messages, files, gzip_files, poison_rate)
    rng = random.Random(seed)
    bounds = [i * messages // files for i in range(files + 1)]
    plan = sample._place(sample._units(messages, poison_rate, wanted, rng), bounds, rng)
    labels = {n: kind for n, (kind, _) in plan.items() if kind != "source"}
    reasons: dict[int, Reasons] = {}
    sent: dict[int, str] = {}  # a redelivered line's text, by its instance

    def line(n: int) -> str:
        kind, instance = plan.get(n, ("good", 0))
        reasons[n] = NO_REASONS
        if kind == "redelivery":
            return sent[instance]
        if kind == "conflicting_duplicate":  # a pair: one parcel (past the day's), two weights
            message = good_message(rng, day, messages + instance // 2, weight=1000 + instance)
            reasons[n] = frozenset({(f"{KEY}.conflicting_duplicate", KEY)})
        else:
            message = good_message(rng, day, n)
            if kind in _MAKERS:
                reasons[n] = frozenset({_MAKERS[kind](message)})
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if kind == "truncated_json":
            text, reasons[n] = text[: len(text) // 2], frozenset({("json.invalid", None)})
        if kind == "source":
            sent[instance] = text + "\n"
        return text + "\n"

    def line_truth(name: str, number: int, n: int) -> EventTruth:
        kind = labels.get(n, "good")
        return EventTruth(name, number, kind, sample._expected(kind), reasons.pop(n))

    paths, truth = sample.write_files(FilePath(out_dir), f"{DATASET}-{day.isoformat()}", bounds, gzip_files,
                                      line, line_truth)
    return SampleBatch(files=paths, truth=truth, messages=messages,
                       outcomes=sample.counted_outcomes(labels, messages, sample._expected))
