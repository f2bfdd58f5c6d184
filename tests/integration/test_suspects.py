"""The suspects' bytes: kept by the pass for failed rows only, read again for the rest."""

from __future__ import annotations

import pytest

from foodtaster.engine.judging.suspects import bytes_of_failed_only, with_bytes_read_again

LINES = "_source_file string, _row_id long, _raw binary"


def _lines(spark, raws):
    return spark.createDataFrame(
        [("file:/in/a.jsonl", i, bytearray(raw)) for i, raw in enumerate(raws)], LINES)


def _passed(spark, raws, failed):
    lines = _lines(spark, raws)
    flags = spark.createDataFrame([(i, i in failed) for i in range(len(raws))],
                                  "_row_id long, _failed boolean")
    return lines, lines.join(flags, "_row_id")


def test_the_pass_keeps_the_bytes_of_failed_rows_and_a_hash_of_the_others(spark):
    _, rows = _passed(spark, [b'{"a":1}', b"not json"], failed={1})
    got = {r["_row_id"]: (r["_raw"], r["_raw_hash"]) for r in bytes_of_failed_only(rows).collect()}
    assert got[0][0] is None and got[0][1] is not None
    assert bytes(got[1][0]) == b"not json" and got[1][1] is None


def test_a_suspect_that_passed_gets_its_own_bytes_back(spark):
    raws = [b'{"a":1}', b"not json", b'{"a":2}']
    lines, rows = _passed(spark, raws, failed={1})
    slim = bytes_of_failed_only(rows)
    whole = with_bytes_read_again(slim.where("_row_id > 0"), lines)
    assert whole.columns == rows.columns  # the hash is gone, every other column kept
    assert {r["_row_id"]: bytes(r["_raw"]) for r in whole.collect()} == {1: raws[1], 2: raws[2]}


def test_bytes_that_changed_under_the_batch_fail_the_job_by_name(spark):
    raws = [b'{"a":1}', b'{"a":2}']
    _, rows = _passed(spark, raws, failed=set())
    changed = _lines(spark, [raws[0], b'{"a":3}'])
    with pytest.raises(Exception, match="a.jsonl row 1 read again differ from those the pass judged"):
        with_bytes_read_again(bytes_of_failed_only(rows), changed).collect()
    lost = changed.where("_row_id = 0")  # a line no longer there
    with pytest.raises(Exception, match="a.jsonl row 1 were not found when read again: the input changed"):
        with_bytes_read_again(bytes_of_failed_only(rows), lost).collect()
