"""Conversation quarantine: a quarantined message holds the later messages of its group.

A dataset that declares `group_by` (orders: `order_id`) and `order_by` (`created_at`)
is a set of conversations. When a message of a group is quarantined, its group is held:
every later message of it (by `order_by`) is quarantined too, with the reason `group`
/ `group.poisoned` naming the poison message, so a consumer never sees a PAID whose
CREATED was poison. Groups held by earlier batches (foodtaster.state.groups, read once
at start) hold this batch's messages the same way, until they are released.

`mark_held` finds, per group, its earliest poison (this batch's failed rows, over a window
by group, and the open groups, a small broadcast table) and holds the rows after it.
A message whose `order_by` cannot be read is held when its group is: there is no
telling whether it comes after the poison.

A group is the value of one field, or of several (`group_by: [carrier, tracking_no]`): then
the JSON array of their values as text (`["DHL","1Z99"]`, `group_column`), as a unique key of
several fields is (docs/decisions/040-a-conversation-of-several-fields.md). A one-field group
keeps its value as text, as it always has: the open groups' log reads the same.

A poison message is named by the contract's unique key (orders: `message_id`, order_events:
`id`); the groups log keeps that value as the poison's `message_id`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from foodtaster.contract.model import Key
from foodtaster.contract.path import Path
from foodtaster.engine.judging.layers import key_column
from foodtaster.engine.judging.reasons import Check, check
from foodtaster.engine.judging.suspects import hash_or_null
from foodtaster.state.groups import RULE, Poison, group_name

GROUP_HASH = "_group_hash"
HELD = "_group_held"  # why a row is held (the poison named), null when it is not
OPEN = StructType([
    StructField("group", StringType(), False),
    StructField("order", TimestampType(), True),
    StructField("poison", StringType(), False),
])


def open_frame(spark: SparkSession, poison: list[Poison]) -> DataFrame | None:
    """The open groups' poison messages as the small DataFrame `mark_held` takes, or None."""
    if not poison:
        return None
    rows = [(p.group, p.order, p.message_id, p.batch_id) for p in poison]
    frame = spark.createDataFrame(rows, "group string, order string, message_id string, batch_id string")
    return frame.select("group", F.to_timestamp("order").alias("order"),
                        _name(F.col("message_id"), F.col("batch_id")).alias("poison"))


def _name(message_id: Column, batch_id: Column) -> Column:
    """How a reason names a poison message: "message <id> of batch <batch>"."""
    unreadable = F.lit("(no readable id)")
    return F.concat(F.lit("message "), F.coalesce(message_id.cast("string"), unreadable),
                    F.lit(" of batch "), batch_id)


def group_column(group_by: Sequence[str]) -> Column:
    """A row's group as the held groups spell it (text; `foodtaster.state.groups.group_text` in
    Python): one field's value cast to a string, or the JSON array of several fields' values as
    strings, null when one of them is null (a row with part of its group missing holds nothing)."""
    if len(group_by) == 1:
        return F.col(group_by[0]).cast("string")
    parts = [F.col(name).cast("string") for name in group_by]
    complete = functools.reduce(lambda a, b: a & b, [part.isNotNull() for part in parts])
    return F.when(complete, F.to_json(F.array(*parts)))


def group_hash(group_by: Sequence[str]) -> Column:
    """A 64-bit hash of a row's group key as the held groups spell it (a string), null where
    the row has none: such a row is never held."""
    return hash_or_null(group_column(group_by))


MESSAGE_ID = Key((Path.of("message_id"),))  # orders' unique key, the tests' default


def poisoned_groups(failed: DataFrame, opened: DataFrame | None) -> DataFrame:
    """The group hashes that may hold a row of the batch (`GROUP_HASH`, each once): its failed
    rows' groups (`failed`: their `group_hash` as `GROUP_HASH`) and the open groups (`open_frame`)."""
    found = failed.select(GROUP_HASH)
    if opened is not None:
        found = found.unionByName(opened.select(hash_or_null(F.col("group")).alias(GROUP_HASH)))
    return found.where(F.col(GROUP_HASH).isNotNull()).distinct()


def mark_held(rows: DataFrame, opened: DataFrame | None, group_by: Sequence[str], order_by: str,
              batch_id: str, *, key: Key = MESSAGE_ID) -> DataFrame:
    """Add `HELD` and fail the rows it holds: a row that passed everything else, in a group
    with a poison message, not before the group's earliest poison. A failed row keeps its own
    reasons.

    The poison messages are the failed rows of `rows` (flagged: `_failed`, the typed
    `group_by`, `order_by` and unique `key`) and the open groups' (`open_frame`). `rows` must hold
    every row of each group that may be held (the job gives its suspects: every failed row and
    every row of a failed or open group), as the earliest poison is found over a window by group.
    """
    group = group_column(group_by)
    name = _name(key_column(key), F.lit(batch_id))
    # Earliest first; a poison whose order is unknown comes first (nulls sort low): it holds all.
    poison = F.when(F.col("_failed") & group.isNotNull(),
                    F.struct(F.col(order_by).alias("order"), name.alias("poison")))
    marked = rows.withColumn("_hp", F.min(poison).over(Window.partitionBy(group)))
    if opened is not None:
        open_earliest = opened.groupBy(F.col("group").alias("_og")).agg(
            F.min(F.struct("order", "poison")).alias("_op"))
        marked = marked.join(F.broadcast(open_earliest), group == F.col("_og"), "left").withColumn(
            "_hp", F.least("_hp", "_op")).drop("_og", "_op")
    earliest = F.col("_hp")
    after = F.col(order_by).isNull() | earliest["order"].isNull() | (F.col(order_by) >= earliest["order"])
    held = ~F.col("_failed") & earliest.isNotNull() & after
    why = F.format_string(f"{group_name(group_by)} %s is held: its %s was quarantined", group,
                          earliest["poison"])
    failed = (F.col("_failed") | held).alias("_failed")
    return marked.select(*(failed if c == "_failed" else c for c in rows.columns),
                         F.when(held, why).alias(HELD))


def group_check(group_by: Sequence[str]) -> Check:
    """The `group.poisoned` reason of a row `mark_held` holds: its value the group's."""
    value = F.col(group_by[0]) if len(group_by) == 1 else group_column(group_by)
    return check(F.col(HELD).isNotNull(), "group", RULE, F.col(HELD), column=group_name(group_by),
                 value=value)


def poison_rows(quarantine: DataFrame, group_by: Sequence[str], order_by: str, *,
                key: Key = MESSAGE_ID) -> DataFrame:
    """The written quarantine rows that hold their group, as `mark_held` found them in the pass:
    a group key, not held themselves, and not only a conflicting duplicate (decided after the
    hold, from the batch's other copies, not from the message). Columns: `group`, `order`
    (ISO text), `message_id` (the unique `key`'s value), lineage."""
    only_conflict = F.forall("reasons", lambda r: r["rule"].endswith(".conflicting_duplicate"))
    return quarantine.where(
        group_column(group_by).isNotNull() & ~F.array_contains(F.col("reasons.rule"), RULE) & ~only_conflict
    ).select(
        group_column(group_by).alias("group"),
        F.date_format(F.col(order_by), "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").alias("order"),
        key_column(key).cast("string").alias("message_id"),
        "_batch_id", "_source_file", "_line_number",
    )
