"""The poison list applied to rows: exact messages and unique-key values, one entry a row."""

from __future__ import annotations

import hashlib

from pyspark.sql import functions as F

from foodtaster.engine.judging.listed import (
    ENTRY,
    SOURCE,
    WHY,
    listed_reasons,
    mark_listed,
    poison_frame,
    unless_listed,
)
from foodtaster.engine.judging.reasons import REASONS, check
from foodtaster.state.poison import Entry

ROWS = "_raw binary, message_id string, _line_number long"


def entry(id_, match, value, why, source="operator", size=None):
    return Entry(id=id_, match=match, value=value, why=why, source=source, added_by="t",
                 added_at="2026-11-22T00:00:00+00:00", size=size)


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def rows(spark):
    return spark.createDataFrame([
        (bytearray(b'{"message_id": "a"}'), "a", 1),
        (bytearray(b'{"message_id": "b"}'), "b", 2),
        (bytearray(b"\xff\xfe not utf-8"), None, 3),
        (bytearray(b'{"message_id": "c"}'), "c", 4),
        (bytearray(b'{"message_id": "c", "x": 1}'), "c", 5),
    ], ROWS)


def by_line(frame):
    return {r["_line_number"]: (r[ENTRY], r[WHY]) for r in frame.collect()}


def test_exact_messages_and_key_values_are_marked_with_their_entry(spark):
    poison = poison_frame(spark, [
        entry("e1", "fingerprint", sha(b"\xff\xfe not utf-8"), "crashes the parser"),
        entry("e2", "key", "c", "order c is a test order"),
    ])
    marked = mark_listed(rows(spark), poison, F.col("message_id"))
    assert marked.count() == 5  # never a row more or less
    assert by_line(marked) == {
        1: (None, None), 2: (None, None), 3: ("e1", "crashes the parser"),
        4: ("e2", "order c is a test order"), 5: ("e2", "order c is a test order"),
    }


def test_an_entry_of_known_size_is_looked_for_only_among_messages_of_that_size(spark):
    raw = b"\xff\xfe not utf-8"
    sized = poison_frame(spark, [entry("e1", "fingerprint", sha(raw), "crashes", size=len(raw))])
    assert by_line(mark_listed(rows(spark), sized, F.col("message_id")))[3] == ("e1", "crashes")
    # the length gates the hash: an entry whose recorded length is not the message's never matches
    other = poison_frame(spark, [entry("e1", "fingerprint", sha(raw), "crashes", size=len(raw) + 1)])
    assert set(by_line(mark_listed(rows(spark), other, F.col("message_id"))).values()) == {(None, None)}
    marked = mark_listed(rows(spark), sized, F.col("message_id"))
    plan = marked._jdf.queryExecution().optimizedPlan().toString()
    assert "octet_length" in plan and "sha2" in plan


def test_an_exact_entry_wins_over_a_key_entry_and_duplicates_do_not_multiply_rows(spark):
    poison = poison_frame(spark, [
        entry("k1", "key", "a", "by key"),
        entry("f2", "fingerprint", sha(b'{"message_id": "a"}'), "exact, newer"),
        entry("f1", "fingerprint", sha(b'{"message_id": "a"}'), "exact, older"),  # two writers listed it
    ])
    marked = mark_listed(rows(spark), poison, F.col("message_id"))
    assert marked.count() == 5
    assert by_line(marked)[1] == ("f1", "exact, older")


def test_without_a_unique_key_only_exact_entries_match(spark):
    poison = poison_frame(spark, [entry("k", "key", "b", "by key"),
                                  entry("f", "fingerprint", sha(b'{"message_id": "b"}'), "exact")])
    marked = mark_listed(rows(spark).drop("message_id"), poison, None)
    assert by_line(marked)[2] == ("f", "exact")
    assert "message_id" not in marked.columns and set(marked.columns) == {
        "_raw", "_line_number", ENTRY, WHY, SOURCE}


def test_an_empty_list_marks_nothing(spark):
    marked = mark_listed(rows(spark), poison_frame(spark, []), F.col("message_id"))
    assert marked.where(F.col(ENTRY).isNotNull()).count() == 0 and marked.count() == 5


def test_the_reason_is_registry_listed_with_the_entry_why(spark):
    poison = poison_frame(spark, [entry("e2", "key", "b", "known bad <script>")])
    marked = mark_listed(rows(spark), poison, F.col("message_id")).select(
        "_line_number", listed_reasons().alias("reasons"))
    assert marked.schema["reasons"].dataType == REASONS
    reasons = {r["_line_number"]: [x.asDict() for x in r["reasons"]] for r in marked.collect()}
    assert reasons[1] == []
    assert reasons[2] == [{"layer": "registry", "rule": "registry.listed", "column": None,
                           "message": "known bad <script>", "value": "e2"}]


def test_a_listed_row_is_not_judged_further(spark):
    poison = poison_frame(spark, [entry("e2", "key", "b", "known bad")])
    judged = check(F.col("message_id").isNull(), "parse", "json.invalid", "not JSON").reason
    marked = mark_listed(rows(spark), poison, F.col("message_id")).select(
        "_line_number", unless_listed(judged).alias("reasons"))
    rules = {r["_line_number"]: [x["rule"] for x in r["reasons"]] for r in marked.collect()}
    assert rules == {1: [], 2: ["registry.listed"], 3: ["json.invalid"], 4: [], 5: []}


def test_a_message_listed_by_a_crash_is_quarantined_as_crash_isolated(spark):
    """An entry the job added when the message crashed a check gives the `crash` layer's reason;
    where an exact entry and a key entry both match, the exact one's source decides."""
    poison = poison_frame(spark, [
        entry("c1", "fingerprint", sha(b'{"message_id": "a"}'), "ValueError: no rule for 13", "crash"),
        entry("k1", "key", "a", "known by key"),
        entry("k2", "key", "b", "known bad", "downstream"),
    ])
    marked = mark_listed(rows(spark), poison, F.col("message_id")).select(
        "_line_number", SOURCE, listed_reasons().alias("reasons"))
    got = {r["_line_number"]: (r[SOURCE], [(x.layer, x.rule, x.message, x.value) for x in r["reasons"]])
           for r in marked.collect()}
    assert got[1] == ("crash", [("crash", "crash.isolated", "ValueError: no rule for 13", "c1")])
    assert got[2] == ("downstream", [("registry", "registry.listed", "known bad", "k2")])
    assert got[3] == (None, [])
