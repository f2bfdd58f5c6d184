"""The shipments generator: the same arguments give the same bytes, every kind asked for comes
out, and its truth counts what it wrote (the engine's verdict on the lines is held to the truth
in tests/integration/test_composite_key.py)."""

from __future__ import annotations

import json
from collections import Counter

from foodtaster_dev.sample_shipments import KEY, POISON_KINDS, generate_shipments


def test_the_same_arguments_give_the_same_bytes_and_every_kind(tmp_path):
    first = generate_shipments(tmp_path / "a", messages=60, poison_rate=0.4, seed=3)
    generate_shipments(tmp_path / "b", messages=60, poison_rate=0.4, seed=3)
    (name,) = first.files
    assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert {t.kind for t in first.truth} == {"good", *POISON_KINDS}
    assert Counter(t.expected for t in first.truth) == {k: v for k, v in first.outcomes.items() if v}
    lines = (tmp_path / "a" / name).read_text().splitlines()
    by_kind = {t.kind: t for t in first.truth}
    good = [json.loads(lines[t.line - 1]) for t in first.truth if t.kind == "good"]
    parcels = [(m["carrier"], m["tracking_no"]) for m in good]
    assert len(set(parcels)) == len(parcels)  # every good scan is another parcel
    copy = by_kind["redelivery"]
    assert copy.expected == "duplicate_dropped" and lines.count(lines[copy.line - 1]) == 2
    pair = [json.loads(lines[t.line - 1]) for t in first.truth if t.kind == "conflicting_duplicate"]
    copies = Counter((m["carrier"], m["tracking_no"]) for m in pair)  # each pair: one parcel, twice
    assert set(copies.values()) == {2} and len({json.dumps(m) for m in pair}) == len(pair)
    assert by_kind["conflicting_duplicate"].reasons == {(f"{KEY}.conflicting_duplicate", KEY)}
    assert by_kind["bad_country"].reasons == {("recipient.country.str_contains", "recipient.country")}
