"""Duplicates of the contract's unique key within a batch.

Byte-identical copies are redeliveries: the first (in file order) is kept, the
rest are dropped and counted. Copies that differ are all quarantined with
`<key>.conflicting_duplicate`. Only the keys that repeat are ever compared, so
the raw bytes of the whole batch are never shuffled.
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from foodtaster.engine.reasons import check

# The most key hashes one task of the batch-wide count holds. That count's hash map is the job's
# largest allocation: with Spark's partitions (AQE coalesced them to two) it grew to 1 GiB of the
# driver's heap at 10M messages; at about 300k keys a task it stays near 100 MiB at any size.
KEYS_PER_TASK = 250_000


def repeated_keys(rows: DataFrame, key: str, messages: int | None = None) -> DataFrame:
    """One row a key that occurs more than once: how many copies, how many distinct
    byte contents, and the first copy's row id. As small as the duplicates are.

    The batch-wide shuffle carries a 64-bit hash of each key, not the key; only rows whose
    hash repeats (the duplicates and the rare collision) are then grouped by the key itself.
    Given the batch's `messages`, that shuffle has a partition a `KEYS_PER_TASK` hashes, so
    what a task holds does not grow with the batch.
    """
    keyed = rows.where(F.col(key).isNotNull()).withColumn("_key_hash", F.xxhash64(key))
    hashes = keyed if messages is None else keyed.select("_key_hash").repartition(
        max(1, math.ceil(messages / KEYS_PER_TASK)), "_key_hash")
    repeated_hashes = hashes.groupBy("_key_hash").count().where(F.col("count") > 1).select("_key_hash")
    return (
        keyed.join(F.broadcast(repeated_hashes), "_key_hash", "left_semi")
        .groupBy(key)
        .agg(
            F.count_distinct("_raw").alias("_variants"),
            F.count("*").alias("_copies"),
            F.min("_row_id").alias("_first_copy"),
        )
        .where(F.col("_copies") > 1)
    )


def mark_duplicates(rows: DataFrame, key: str, repeated: DataFrame | None = None) -> DataFrame:
    """Add `_redelivery` (true for a copy to drop) and `_conflict` (its reasons: none or one).

    Pass `repeated` (from `repeated_keys`, persisted) to reuse it across several actions.
    """
    repeated = repeated_keys(rows, key) if repeated is None else repeated
    marked = rows.join(repeated, key, "left")
    redelivery = (F.col("_variants") == 1) & (F.col("_row_id") != F.col("_first_copy"))
    conflict: Column = check(
        F.col("_variants") > 1, "contract", f"{key}.conflicting_duplicate",
        F.format_string(f"{key} appears %d times in the batch with different content", "_copies"),
        column=key, value=F.col(key),
    ).reason
    return marked.select(
        *rows.columns,
        F.coalesce(redelivery, F.lit(False)).alias("_redelivery"),
        conflict.alias("_conflict"),
    )
