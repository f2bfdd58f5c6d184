"""Redeliveries are dropped and counted; conflicting copies are all quarantined."""


from pyspark.sql import functions as F
from support.frames import lines_frame

from contracts.orders import Orders
from foodtaster.contract import read_contract
from foodtaster.contract.model import Key
from foodtaster.contract.path import Path
from foodtaster.engine.judging.duplicates import key_hash, mark_duplicates, repeated_hashes
from foodtaster.engine.judging.judging import decide_outcomes, flag_lines, with_reasons
from foodtaster.engine.judging.suspects import cleared, suspects

MESSAGE_ID = Key((Path.of("message_id"),))

CONTRACT = read_contract(Orders)
BASE = ('{"message_id": "%s", "order_id": "o", "customer_id": "c", "amount": %s, "currency": "USD", '
        '"status": "CREATED", "created_at": "2026-11-20T10:00:00Z", "items": 1}')


def outcomes(spark, lines, every_copy_here=False):
    flagged = flag_lines(lines_frame(spark, [line.encode() for line in lines]), CONTRACT, 1 << 20)
    decided = decide_outcomes(flagged, CONTRACT, every_copy_here=every_copy_here)
    rows = with_reasons(decided, CONTRACT, 1 << 20).orderBy("_row_id").collect()
    return [(r._outcome, sorted(x.rule for x in r.reasons)) for r in rows]


def test_identical_copies_keep_the_first_and_drop_the_rest(spark):
    a = BASE % ("m1", 5)
    assert outcomes(spark, [a, BASE % ("m2", 5), a, a]) == [
        ("valid", []), ("valid", []), ("duplicate", []), ("duplicate", [])]


def test_differing_copies_are_all_quarantined(spark):
    got = outcomes(spark, [BASE % ("m1", 5), BASE % ("m1", 6), BASE % ("m1", 5)])
    assert got == [("quarantined", ["message_id.conflicting_duplicate"])] * 3


def test_an_invalid_redelivery_is_still_counted_once_in_quarantine(spark):
    bad = BASE % ("m1", -1)
    rule = ["amount.greater_than_or_equal_to(0)"]
    assert outcomes(spark, [bad, bad]) == [("quarantined", rule), ("duplicate", rule)]


def test_copies_compared_over_a_window_decide_as_the_repeated_keys_joined(spark):
    """The job compares its suspects' copies over a window by key (`every_copy_here`); a
    redrive joins the repeated keys' table. The same outcomes and reasons, copy for copy."""
    a, bad = BASE % ("m1", 5), BASE % ("m4", -1)
    lines = [a, BASE % ("m3", 5), a, BASE % ("m2", 6), a, BASE % ("m2", 5), bad, bad,
             '{"amount": 1}', '{"amount": 1}']
    conflict, rule = ["message_id.conflicting_duplicate"], ["amount.greater_than_or_equal_to(0)"]
    joined = outcomes(spark, lines)
    assert joined[:8] == [
        ("valid", []), ("valid", []), ("duplicate", []), ("quarantined", conflict), ("duplicate", []),
        ("quarantined", conflict), ("quarantined", rule), ("duplicate", rule),
    ]
    assert [o for o, _ in joined[8:]] == ["quarantined", "quarantined"]  # no key: never copies
    assert outcomes(spark, lines, every_copy_here=True) == joined


def test_messages_without_a_key_are_never_duplicates(spark):
    got = outcomes(spark, ['{"a": 1}', '{"a": 1}'])
    assert [o for o, _ in got] == ["quarantined", "quarantined"]


def test_outcome_column_is_the_split(spark):
    flagged = flag_lines(lines_frame(spark, [(BASE % ("m1", 5)).encode(), b"{"]), CONTRACT, 1 << 20)
    counts = dict(decide_outcomes(flagged, CONTRACT).groupBy("_outcome").agg(F.count("*")).collect())
    assert counts == {"valid": 1, "quarantined": 1}


def test_the_suspects_hold_every_failed_row_and_every_copy_and_are_judged_as_the_batch(spark):
    lines = [BASE % ("m1", 5), BASE % ("m1", 6), BASE % ("m2", 5), BASE % ("m3", -1),
             BASE % ("m4", 5), BASE % ("m4", 5), '{"amount": 1}', '{"amount": 2}']
    flagged = flag_lines(lines_frame(spark, [line.encode() for line in lines]), CONTRACT, 1 << 20)
    hashes = repeated_hashes(flagged, MESSAGE_ID)
    suspect = suspects(flagged, [(key_hash(MESSAGE_ID), hashes)])

    def marks(rows):
        return {r["_row_id"]: (r["_redelivery"], len(r["_conflict"])) for r in rows.collect()}

    # m1 and m4 repeat, m3 failed, the two lines without a key failed: m2 alone is left out
    assert sorted(r.message_id or "" for r in suspect.collect()) == ["", "", "m1", "m1", "m3", "m4", "m4"]
    assert [r.message_id for r in cleared(flagged, [(key_hash(MESSAGE_ID), hashes)]).collect()] == ["m2"]
    whole = marks(mark_duplicates(flagged, MESSAGE_ID))
    among = marks(mark_duplicates(suspect, MESSAGE_ID, every_copy_here=True))
    assert among == {row_id: whole[row_id] for row_id in among}
    assert sorted(among.values()) == [(False, 0)] * 4 + [(False, 1)] * 2 + [(True, 0)]  # m1 both, m4's copy
