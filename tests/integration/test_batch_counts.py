"""The batch's counts in one aggregate: the same splits, repeated keys and failed groups as
each counted alone, shuffled into as many tasks as the batch's size asks."""

import re

import pytest
from pyspark.sql import functions as F
from support.frames import lines_frame

from contracts.orders import Orders
from foodtaster.contract import read_contract
from foodtaster.contract.model import Key
from foodtaster.contract.path import Path
from foodtaster.engine.batch import batch_counts as counts_of
from foodtaster.engine.batch import ingest
from foodtaster.engine.judging.duplicates import KEY_HASH, KEYS_PER_TASK, repeated_hashes
from foodtaster.engine.judging.judging import flag_lines
from foodtaster.engine.split.group_hold import GROUP_HASH, group_hash

MESSAGE_ID = Key((Path.of("message_id"),))

CONTRACT = read_contract(Orders)
LINE = ('{"message_id": "%s", "order_id": "%s", "customer_id": "c", "amount": %s, "currency": "USD", '
        '"status": "CREATED", "created_at": "2026-11-20T10:00:00Z", "items": 1}')


@pytest.fixture(scope="module")
def flagged(spark):
    """41 messages in two files: seven keys repeat, and four orders have a failed message."""
    lines = [LINE % (f"m{i % 7}", f"o{i % 5}", -1 if i % 5 == 0 else i) for i in range(40)]
    lines += [LINE % ("solo", "o9", 1)]
    first, second = lines_frame(spark, [x.encode() for x in lines[:25]], "file:/b/a.jsonl"), lines_frame(
        spark, [x.encode() for x in lines[25:]], "file:/b/b.jsonl")
    both = first.unionByName(second.withColumn("_row_id", F.col("_row_id") + 100))
    return flag_lines(both, CONTRACT, 1 << 20).cache()


def hashes(frame, column):
    return sorted(r[column] for r in frame.collect())


def test_the_splits_keys_and_groups_are_those_counted_alone(flagged):
    counts = counts_of.batch_counts(flagged, MESSAGE_ID, group_hash(("order_id",)))

    splits = {(r._source_file, r._split_start): r.asDict() for r in counts_of.split_offsets(counts).collect()}
    alone = {(r._source_file, r._split_start): r.asDict() for r in ingest.split_offsets(flagged).collect()}
    assert splits == alone
    assert sorted(s["_split_lines"] for s in splits.values()) == [16, 25]

    repeated = hashes(counts_of.repeated_key_hashes(counts), KEY_HASH)
    assert repeated == hashes(repeated_hashes(flagged, MESSAGE_ID), KEY_HASH)
    assert len(repeated) == 7  # every key but "solo"

    failed = hashes(counts_of.failed_group_hashes(counts), GROUP_HASH)
    # o0 failed eight times (amount -1), each other order passed
    assert failed == [flagged.where("order_id = 'o0'").select(group_hash(("order_id",))).first()[0]]
    assert flagged.where("_failed").count() == 8


def test_without_a_key_or_groups_only_the_splits_are_counted(flagged):
    counts = counts_of.batch_counts(flagged, None, None)
    assert {r[counts_of.SET] for r in counts.collect()} == {counts_of.SPLIT}
    assert counts_of.split_offsets(counts).count() == 2


def test_the_counts_shuffle_into_a_task_a_keys_per_task_and_the_session_is_put_back(spark, flagged):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    tasks = counts_of.partitions(3 * KEYS_PER_TASK + 1)  # as if the batch were that large
    assert tasks == 4 and counts_of.partitions(10) == 1
    with counts_of.shuffled_into(spark, tasks):
        counts = counts_of.batch_counts(flagged, MESSAGE_ID, None)
        counts.collect()
        plan = counts._jdf.queryExecution().executedPlan().toString()
    assert re.search(r"hashpartitioning\([^)]*_key_hash#\d+L[^)]*, 4\)", plan), plan
    assert spark.conf.get("spark.sql.shuffle.partitions") == before
    assert spark.conf.get("spark.sql.adaptive.coalescePartitions.enabled") == "true"
