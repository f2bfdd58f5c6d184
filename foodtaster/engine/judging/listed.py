"""Listed messages: the poison list applied to a batch's rows, as one pure transformation.

The job reads the list once at start (foodtaster.state.poison), turns it into a small
DataFrame (`poison_frame`) that is broadcast, and `mark_listed` adds to each row the
entry it matches, if any. A listed row is quarantined without being judged further:
its reason is `registry.listed` with the entry's why as the message, or, for an entry the
job added when the message crashed it (source `crash`, foodtaster.engine.batch.crash),
`crash.isolated` in the `crash` layer.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from foodtaster import rule_ids
from foodtaster.engine.judging.reasons import Check, check
from foodtaster.state.poison import Entry

RULE = rule_ids.LISTED
CRASH_RULE = rule_ids.CRASH_ISOLATED
ENTRY = "_listed_entry"  # the matching entry's id, null when not listed
WHY = "_listed_why"  # the matching entry's why, null when not listed
SOURCE = "_listed_source"  # who added the matching entry: operator, crash, downstream
POISON = StructType([
    StructField("entry_id", StringType(), False),
    StructField("match", StringType(), False),  # "fingerprint" | "key"
    StructField("value", StringType(), False),
    StructField("why", StringType(), False),
    StructField("source", StringType(), False),
    StructField("size", LongType(), True),  # a fingerprint's message length, when known
])


def poison_frame(spark: SparkSession, entries: Iterable[Entry]) -> DataFrame:
    """The entries in force as the small DataFrame `mark_listed` broadcasts."""
    return spark.createDataFrame([(e.id, e.match, e.value, e.why, e.source, e.size) for e in entries], POISON)


def _first_entry(poison: DataFrame, match: str, name: str) -> DataFrame:
    """One entry a value (the oldest id), so that a join never multiplies a row."""
    first = F.min(F.struct("entry_id", "why", "source"))
    return (
        poison.where(F.col("match") == match).groupBy("value").agg(first.alias("entry"))
        .select(F.col("value").alias(name), F.col("entry.entry_id").alias(f"{name}_id"),
                F.col("entry.why").alias(f"{name}_why"), F.col("entry.source").alias(f"{name}_source"))
    )


def mark_listed(rows: DataFrame, poison: DataFrame, key: Column | None) -> DataFrame:
    """Add `_listed_entry`, `_listed_why` and `_listed_source` (null when the row is not listed).

    `rows` needs `_raw` (the message's bytes as landed) and, when `key` names the
    dataset's unique key, that column. An exact-message entry wins over a key entry.
    """
    by_bytes = _first_entry(poison, "fingerprint", "_fp")
    marked = rows.withColumn("_fp", _fingerprint(poison)).join(F.broadcast(by_bytes), "_fp", "left")
    entry, why, source = F.col("_fp_id"), F.col("_fp_why"), F.col("_fp_source")
    drop = ["_fp", "_fp_id", "_fp_why", "_fp_source"]
    if key is not None:
        by_key = _first_entry(poison, "key", "_key")
        marked = marked.join(F.broadcast(by_key), key.cast("string") == F.col("_key"), "left")
        by_fp = F.col("_fp_id").isNotNull()
        entry, why = F.coalesce(entry, F.col("_key_id")), F.coalesce(why, F.col("_key_why"))
        source = F.when(by_fp, source).otherwise(F.col("_key_source"))
        drop += ["_key", "_key_id", "_key_why", "_key_source"]
    return marked.withColumn(ENTRY, entry).withColumn(WHY, why).withColumn(SOURCE, source).drop(*drop)


def _fingerprint(poison: DataFrame) -> Column:
    """A row's SHA-256, computed only where an entry could match it: the messages of a listed
    length (about a tenth of the floor's CPU when every message of every batch was hashed);
    every message when an entry's length is unknown (given as a hash alone); none without a
    fingerprint entry. The list is the driver's own few rows: read here, no Spark job."""
    sizes = [r["size"] for r in poison.where(F.col("match") == "fingerprint").select("size").collect()]
    digest = F.sha2(F.col("_raw"), 256)
    if not sizes:
        return F.lit(None).cast(StringType())
    if None in sizes:
        return digest
    return F.when(F.octet_length("_raw").isin(sorted(set(sizes))), digest)


def listed_check() -> Check:
    """The `registry.listed` check on rows from `mark_listed`: fails where a row is listed."""
    return check(F.col(ENTRY).isNotNull(), "registry", RULE, F.col(WHY), value=F.col(ENTRY))


def crash_check() -> Check:
    """The `crash.isolated` check: fails where a row is listed by an entry a crash added."""
    return check(F.col(SOURCE) == "crash", "crash", CRASH_RULE, F.col(WHY), value=F.col(ENTRY))


def listed_reasons() -> Column:
    """One `registry.listed` reason for a listed row (`crash.isolated` when its entry came from
    a crash), or none."""
    return F.when(F.col(SOURCE) == "crash", crash_check().reason).otherwise(listed_check().reason)


def unless_listed(reasons: Column) -> Column:
    """A row's reasons, or for a listed row its `registry.listed` reason alone: a listed
    message is quarantined without being judged further."""
    return F.when(F.col(ENTRY).isNotNull(), listed_reasons()).otherwise(reasons)
