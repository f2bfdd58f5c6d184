"""What the batch as a whole says, counted from every row in one scan and one shuffle.

Three things need every row of the kept pass before any row is written: the file splits
(for line numbers and the lines read), the key hashes that repeat (`duplicates`) and the
groups of the failed rows (`groups`). They are one aggregate over Spark's grouping sets:
each row is expanded into one row a set before the map side aggregates, so the kept pass is
read once and shuffled once, as small as the splits, the repeated keys and the failed groups,
rather than in two aggregates (the splits, then the keys), two scans and two shuffles
(docs/decisions/007-the-batch-counted-in-one-aggregate.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from foodtaster.contract.model import Key
from foodtaster.engine.batch import ingest
from foodtaster.engine.judging.duplicates import KEY_HASH, KEYS_PER_TASK, key_hash
from foodtaster.engine.split.group_hold import GROUP_HASH

SET = "_set"  # which count a row is: one of the three below
SPLIT, REPEATED_KEY, FAILED_GROUP = "split", "repeated key", "failed group"


def batch_counts(rows: DataFrame, key: Key | None, group_hash: Column | None) -> DataFrame:
    """One row a file split (`SET` `SPLIT`, `ingest.split_aggregates`), a key hash that occurs
    more than once (`REPEATED_KEY`, `KEY_HASH`; with a unique `key`) and a failed row's group
    hash (`FAILED_GROUP`, `GROUP_HASH`; with a `group_hash`, a row's `groups.group_hash`)."""
    columns: list[str | Column] = [*ingest.SPLIT_KEYS, "_row_id", "_modified_at"]
    sets = [ingest.SPLIT_KEYS]
    label = F.when(F.grouping(ingest.SPLIT_KEYS[0]) == 0, F.lit(SPLIT))
    wanted = F.col(SET) == SPLIT
    if key is not None:
        columns.append(key_hash(key).alias(KEY_HASH))
        sets.append([KEY_HASH])
        label = label.when(F.grouping(KEY_HASH) == 0, F.lit(REPEATED_KEY))
        # `_split_lines` counts each set's rows: a key hash's, its copies. A row without a key
        # (a null hash) never repeats.
        copies = F.col("_split_lines")
        wanted = wanted | ((F.col(SET) == REPEATED_KEY) & F.col(KEY_HASH).isNotNull() & (copies > 1))
    if group_hash is not None:
        columns.append(F.when(F.col("_failed"), group_hash).alias(GROUP_HASH))
        sets.append([GROUP_HASH])
        label = label.otherwise(F.lit(FAILED_GROUP))
        wanted = wanted | ((F.col(SET) == FAILED_GROUP) & F.col(GROUP_HASH).isNotNull())
    by = [column for group in sets for column in group]
    counted = rows.select(*columns).groupingSets(sets, *by).agg(*ingest.split_aggregates(), label.alias(SET))
    return counted.where(wanted)


def split_offsets(counts: DataFrame) -> DataFrame:
    """The file splits of `batch_counts` as `ingest.split_offsets` gives them."""
    return ingest.with_lines_before(counts.where(F.col(SET) == SPLIT).drop(SET, KEY_HASH, GROUP_HASH))


def repeated_key_hashes(counts: DataFrame) -> DataFrame:
    """The repeated key hashes of `batch_counts`, one `KEY_HASH` row each."""
    return counts.where(F.col(SET) == REPEATED_KEY).select(KEY_HASH)


def failed_group_hashes(counts: DataFrame) -> DataFrame:
    """The failed rows' group hashes of `batch_counts`, one `GROUP_HASH` row each."""
    return counts.where(F.col(SET) == FAILED_GROUP).select(GROUP_HASH)


def partitions(messages: int) -> int:
    """How many tasks count a batch of `messages`: `KEYS_PER_TASK` key hashes a task, so what a
    task holds does not grow with the batch."""
    return max(1, math.ceil(messages / KEYS_PER_TASK))


@contextmanager
def shuffled_into(spark: SparkSession, tasks: int) -> Iterator[None]:
    """Plans built and run inside shuffle into exactly `tasks` partitions.

    An aggregate shuffles into `spark.sql.shuffle.partitions`, which adaptive execution then
    coalesces by bytes: the repeated keys' hash maps ended up in two tasks holding half the
    batch's keys each, the driver's largest allocation in local mode
    (docs/decisions/007-the-batch-counted-in-one-aggregate.md). Spark has no partition count for
    one aggregate, so this sets the session's for the block and puts it back after.
    """
    settings = {"spark.sql.shuffle.partitions": str(tasks),
                "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    before = {name: spark.conf.get(name) for name in settings}  # both have defaults: a value each
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, old in before.items():
            if old is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, old)
