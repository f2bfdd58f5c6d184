"""Conversation quarantine: a quarantined message holds the later messages of its group.

A dataset that declares `group_by` (orders: `order_id`) and `order_by` (`created_at`)
is a set of conversations. When a message of a group is quarantined, its group is held:
every later message of it (by `order_by`) is quarantined too, with the reason `group`
/ `group.poisoned` naming the poison message, so a consumer never sees a PAID whose
CREATED was poison. Groups held by earlier batches (foodtaster.state.groups, read once
at start) hold this batch's messages the same way, until they are released.

`holding` finds, per held group, its earliest poison (this batch's failed rows and the
open groups); `mark_held` joins it (broadcast: one row a held group) to the rows.
A message whose `order_by` cannot be read is held when its group is: there is no
telling whether it comes after the poison.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from foodtaster.engine.reasons import Check, check
from foodtaster.engine.suspects import hash_or_null
from foodtaster.state.groups import RULE, Poison

GROUP_HASH = "_group_hash"
FAILED_GROUPS = "_failed_groups"  # the failed rows' group hashes, one array an aggregated row
HELD = "_group_held"  # why a row is held (the poison named), null when it is not
OPEN = StructType([
    StructField("group", StringType(), False),
    StructField("order", TimestampType(), True),
    StructField("poison", StringType(), False),
])


def open_frame(spark: SparkSession, poison: list[Poison]) -> DataFrame | None:
    """The open groups' poison messages as the small DataFrame `holding` takes, or None."""
    if not poison:
        return None
    rows = [(p.group, p.order, _name(p.message_id, p.batch_id)) for p in poison]
    frame = spark.createDataFrame(rows, "group string, order string, poison string")
    return frame.select("group", F.to_timestamp("order").alias("order"), "poison")


def _name(message_id: str | None, batch_id: str) -> str:
    return f"message {message_id or '(no readable message_id)'} of batch {batch_id}"


def group_hash(group_by: str) -> Column:
    """A 64-bit hash of a row's group key as the held groups spell it (a string), null where
    the row has none: such a row is never held."""
    return hash_or_null(F.col(group_by).cast("string"))


def gather_failed_groups(row_hash: Column) -> Column:
    """An aggregate (`FAILED_GROUPS`): the group hashes (`row_hash`, a row's `group_hash`) of
    the failed rows it reads, each once. Small (failed rows are a few percent), so the job
    gathers it in a scan it makes anyway, one array a file split."""
    return F.collect_set(F.when(F.col("_failed"), row_hash)).alias(FAILED_GROUPS)


def failed_group_hashes(gathered: DataFrame) -> DataFrame:
    """The rows' arrays of `gather_failed_groups` as one `GROUP_HASH` row a hash, as
    `poisoned_groups` takes them."""
    return gathered.select(F.explode(FAILED_GROUPS).alias(GROUP_HASH))


def poisoned_groups(failed: DataFrame, opened: DataFrame | None) -> DataFrame:
    """The group hashes that may hold a row of the batch (`GROUP_HASH`, each once): its failed
    rows' groups (`failed`: their `group_hash` as `GROUP_HASH`) and the open groups (`open_frame`)."""
    found = failed.select(GROUP_HASH)
    if opened is not None:
        found = found.unionByName(opened.select(hash_or_null(F.col("group")).alias(GROUP_HASH)))
    return found.where(F.col(GROUP_HASH).isNotNull()).distinct()


def holding(rows: DataFrame, opened: DataFrame | None, group_by: str, order_by: str,
            batch_id: str) -> DataFrame:
    """One row a held group: its key (`group`), its earliest poison's `order` and its name.

    `rows` are flagged rows (`_failed`, the typed `group_by`, `order_by`, `message_id`).
    """
    failed = rows.where(F.col("_failed") & F.col(group_by).isNotNull()).select(
        F.col(group_by).cast("string").alias("group"), F.col(order_by).alias("order"),
        F.concat(F.lit("message "), F.coalesce(F.col("message_id").cast("string"),
                                                F.lit("(no readable message_id)")),
                 F.lit(f" of batch {batch_id}")).alias("poison"),
    )
    poison = failed if opened is None else failed.unionByName(opened)
    # Earliest first; a poison whose order is unknown comes first (nulls sort low): it holds all.
    earliest = F.min(F.struct(F.col("order"), F.col("poison")))
    return poison.groupBy("group").agg(earliest.alias("_p")).select(
        "group", F.col("_p.order").alias("order"), F.col("_p.poison").alias("poison"))


def mark_held(rows: DataFrame, held_groups: DataFrame, group_by: str, order_by: str) -> DataFrame:
    """Add `_group_held` and fail the rows it holds: a row that passed everything else, in a
    held group, not before the group's earliest poison. A failed row keeps its own reasons."""
    joined = rows.join(
        F.broadcast(held_groups.select(F.col("group").alias("_hg"), F.col("order").alias("_ho"),
                                       F.col("poison").alias("_hp"))),
        F.col(group_by).cast("string") == F.col("_hg"), "left",
    )
    after = F.col(order_by).isNull() | F.col("_ho").isNull() | (F.col(order_by) >= F.col("_ho"))
    held = ~F.col("_failed") & F.col("_hg").isNotNull() & after
    why = F.format_string(f"{group_by} %s is held: its %s was quarantined", F.col("_hg"), F.col("_hp"))
    return (
        joined.withColumn(HELD, F.when(held, why))
        .withColumn("_failed", F.col("_failed") | held)
        .drop("_hg", "_ho", "_hp")
    )


def group_check(group_by: str) -> Check:
    """The `group.poisoned` reason of a row `mark_held` holds."""
    return check(F.col(HELD).isNotNull(), "group", RULE, F.col(HELD), column=group_by,
                 value=F.col(group_by))


def poison_rows(quarantine: DataFrame, group_by: str, order_by: str) -> DataFrame:
    """The written quarantine rows that hold their group, as `holding` found them in the pass:
    a group key, not held themselves, and not only a conflicting duplicate (decided after the
    hold, from the batch's other copies, not from the message). Columns: `group`, `order`
    (ISO text), `message_id`, lineage."""
    only_conflict = F.forall("reasons", lambda r: r["rule"].endswith(".conflicting_duplicate"))
    return quarantine.where(
        F.col(group_by).isNotNull() & ~F.array_contains(F.col("reasons.rule"), RULE) & ~only_conflict
    ).select(
        F.col(group_by).cast("string").alias("group"),
        F.date_format(F.col(order_by), "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").alias("order"),
        F.col("message_id").cast("string").alias("message_id"),
        "_batch_id", "_source_file", "_line_number",
    )
