"""Duplicates of the contract's unique key within a batch.

Byte-identical copies are redeliveries: the first (in file order) is kept, the
rest are dropped and counted. Copies that differ are all quarantined with
`<key>.conflicting_duplicate`. Only the keys that repeat are ever compared, so
the raw bytes of the whole batch are never shuffled: on a whole batch (a redrive),
the key hashes are counted first; the job gives only its suspects, which hold every
copy of each repeated key, and those are compared over a window by key.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from foodtaster.contract.model import Key
from foodtaster.engine.judging.layers import key_column, named
from foodtaster.engine.judging.reasons import check
from foodtaster.engine.judging.suspects import hash_or_null

# The most key hashes one task of the batch's counts holds (`batch_counts`). That count's hash
# map is the job's largest allocation: with Spark's partitions (AQE coalesced them to two) it grew
# with the batch; bounded by keys a task, it stays the same size at any batch size
# (docs/decisions/013-a-flat-driver-heap.md).
KEYS_PER_TASK = 250_000


KEY = "_key"  # a repeated key's value, beside the rows it is joined to
KEY_HASH = "_key_hash"  # a 64-bit hash of the key, null where the key is


def key_hash(key: Key) -> Column:
    """`KEY_HASH` of a row. Null on a null key, which never repeats."""
    return hash_or_null(key_column(key))


def repeated_hashes(rows: DataFrame, key: Key) -> DataFrame:
    """One row (`KEY_HASH`) a key hash that occurs more than once: the repeated keys and the
    rare collision, carrying the hash, not the key. (The job counts them with the batch's other
    counts: `batch_counts`, a `KEYS_PER_TASK` a task.)

    The hashes are repartitioned by hash before they are counted, so the map side builds no
    hash map (the keys are nearly all distinct).
    """
    hashes = rows.select(key_hash(key).alias(KEY_HASH)).where(F.col(KEY_HASH).isNotNull())
    return hashes.repartition(KEY_HASH).groupBy(KEY_HASH).count().where(F.col("count") > 1).select(KEY_HASH)


def repeated_keys(rows: DataFrame, key: Key) -> DataFrame:
    """One row a key that occurs more than once in `rows`: how many copies, how many distinct
    byte contents, and the first copy's row id. As small as the duplicates are.

    Only rows whose hash repeats (`repeated_hashes`) are grouped by the key itself.
    """
    hashes = repeated_hashes(rows, key)
    return (
        rows.where(key_column(key).isNotNull()).withColumn(KEY_HASH, key_hash(key))
        .join(F.broadcast(hashes), KEY_HASH, "left_semi")
        .groupBy(key_column(key).alias(KEY))
        .agg(
            F.count_distinct("_raw").alias("_variants"),
            F.count("*").alias("_copies"),
            F.min("_row_id").alias("_first_copy"),
        )
        .where(F.col("_copies") > 1)
    )


def mark_duplicates(rows: DataFrame, key: Key, *, every_copy_here: bool = False) -> DataFrame:
    """Add `_redelivery` (true for a copy to drop) and `_conflict` (its reasons: none or one).

    With `every_copy_here`, `rows` hold every copy of each key that repeats in the batch (the job's
    suspects, a few percent of it): the copies are compared over a window by key, with no table
    of repeated keys to build, keep and join.
    """
    if every_copy_here:
        # A row without a key is alone in its window: it never repeats.
        value = key_column(key)
        by_key = Window.partitionBy(value, F.when(value.isNull(), F.col("_row_id")))
        marked = rows.select(
            "*", F.count("*").over(by_key).alias("_copies"),
            F.min("_row_id").over(by_key).alias("_first_copy"),
            (F.min("_raw").over(by_key) == F.max("_raw").over(by_key)).alias("_identical"),
        )
    else:
        repeated = repeated_keys(rows, key)
        marked = rows.join(repeated, key_column(key) == repeated[KEY], "left").drop(KEY)
        marked = marked.withColumn("_identical", F.col("_variants") == 1)
    redelivery = F.col("_identical") & (F.col("_row_id") != F.col("_first_copy"))
    conflict: Column = check(
        ~F.col("_identical"), "contract", f"{key}.conflicting_duplicate",
        F.format_string(f"{key} appears %d times in the batch with different content", "_copies"),
        column=str(key), value=key_column(key),
    ).reason
    return marked.select(
        *map(named, rows.columns),
        F.coalesce(redelivery, F.lit(False)).alias("_redelivery"),
        conflict.alias("_conflict"),
    )
