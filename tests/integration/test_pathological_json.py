"""What could crash or hang the JVM side (issue 10) passes the bytes layer and is quarantined at
its layer, with a clear reason, and the job finishes: nesting 100k deep, numbers of a million
digits or with exponents beyond any int, strings near the size limit, and a file that is one
line of hundreds of MB without a newline. No crash isolation is needed for any of them."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import functions as F
from support.frames import batch_frame

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE, VALID, audit_branch

DATE = "2026-11-20"
MiB = 1024 * 1024
BASE = {"message_id": "m-0", "order_id": "o", "customer_id": "c", "amount": 10, "currency": "EUR",
        "status": "CREATED", "created_at": "2026-11-20T10:00:00Z", "items": 1}


def _with(line: int, field: str, literal: bytes) -> bytes:
    """BASE with its own message and order ids (one order a message: orders is a conversation
    dataset) and `field` written as the raw JSON `literal`."""
    message = {**BASE, "message_id": f"m-{line}", "order_id": f"o-{line}"}
    text = json.dumps({k: v for k, v in message.items() if k != field}).encode()
    return text[:-1] + b', "' + field.encode() + b'": ' + literal + b"}"


# line -> (the line, the rule it must be quarantined with, words its message must hold)
CASES = {
    1: (b"[" * 100_000, "json.too_deep", "nested deeper than 1000 levels"),
    2: (b'{"a":' * 100_000, "json.too_deep", "nested deeper than 1000 levels"),
    3: (_with(3, "producer", b"[" * 500_000), "json.too_deep", "nested deeper than 1000 levels"),
    4: (_with(4, "items", b"9" * 1_000_000), "items.out_of_range", "beyond 64 bits"),
    5: (_with(5, "amount", b"9" * 1_000_000), "amount.out_of_range", "no double holds"),
    6: (_with(6, "amount", b"0." + b"0" * 1_000_000 + b"1"), "amount.out_of_range", "no double holds"),
    7: (_with(7, "amount", b"1e2147483648"), "amount.out_of_range", "no double holds"),
    8: (_with(8, "amount", b"1e-2147483649"), "amount.out_of_range", "no double holds"),
    9: (_with(9, "items", b"1e2147483648"), "items.type(integer)", "got a non-integer number"),
    10: (_with(10, "customer_id", b'"' + b"\\u0041" * 170_000 + b'"'), None, None),  # 1 MB, valid
    11: (_with(11, "producer", b'"' + b"x" * (MiB - 400) + b'"'), None, None),  # just under the limit
}


def test_pathological_json_is_quarantined_at_its_layer_and_the_job_finishes(spark, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    inbox = Path(lake.inbox("orders", DATE))
    inbox.mkdir(parents=True)
    (inbox / "pathological.jsonl").write_bytes(b"\n".join(line for line, _, _ in CASES.values()) + b"\n")
    with (inbox / "one-line.jsonl").open("wb") as out:  # a file that is one 200 MB line, no newline
        out.write(b'{"s": "')
        for _ in range(200):
            out.write(b"x" * MiB)
    landed = land_batch(lake, "orders", DATE)
    for name in ("pathological.jsonl", "one-line.jsonl"):
        (inbox / name).unlink()

    summary = run_batch(spark, BatchRun(config=get_dataset("orders"), input_path=landed.raw_path, lake=lake,
                                        batch_id=landed.batch_id, batch_date=DATE, gate=False)).to_json()

    assert summary["messages"] == len(CASES) + 1 and summary["crash_isolated"] == []
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    quarantine = batch_frame(spark, lake, "orders", QUARANTINE, landed.batch_id)
    got = {(r._source_file.rsplit("/", 1)[1], r._line_number): r.reasons for r in quarantine.collect()}
    assert [(r.layer, r.rule) for r in got[("one-line.jsonl", 1)]] == [("bytes", "line.too_large")]
    for line, (_, rule, words) in CASES.items():
        reasons = got.get(("pathological.jsonl", line), [])
        if rule is None:
            assert reasons == [], (line, reasons)
            continue
        assert [r.rule for r in reasons] == [rule], (line, reasons)
        assert words in reasons[0].message, (line, reasons[0].message)
    # held (10 of 12 quarantined): its valid rows stay staged
    valid = batch_frame(spark, lake, "orders", VALID, landed.batch_id, ref=audit_branch(landed.batch_id))
    assert sorted(r.message_id for r in valid.select("message_id").collect()) == ["m-10", "m-11"]
    assert valid.where(F.length("producer") > MiB - 500).count() == 1
