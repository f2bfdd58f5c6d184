"""Reference checks: a field's value must exist among the published valid rows of another
dataset (orders' `customer_id` among the customers'). The first retryable rule.

A contract declares one in the field's pandera metadata (`references`, and `retry` for a
retryable one), read by foodtaster.contract_references, which needs no Spark. `retry`
makes the rule retryable: a message failing it (and nothing else) is quarantined as
`retrying`, and the retry pass (foodtaster.engine.second_chances.retry) checks it again later.
The job reads the referenced keys once (`reference_keys`, broadcast) and `mark_references`
adds one boolean a reference to the pass; `reference_checks` gives their reasons.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from foodtaster.contract_references import Reference
from foodtaster.engine.judging.reasons import Check, check
from foodtaster.state.lake import Lake
from foodtaster.state.tables import VALID, DatasetTables


def reference_keys(spark: SparkSession, lake: Lake, reference: Reference) -> DataFrame | None:
    """The referenced dataset's published keys (distinct), or None when it never published:
    a reference to a dataset not yet in the lake is not checked (logged by the caller),
    so that setting up a new dataset never quarantines everything that points at it."""
    published = read_published(spark, lake, reference.dataset)
    if published is None or reference.key not in published.columns:
        return None
    return published.select(F.col(reference.key).cast("string").alias("_ref_key")).distinct()


def read_published(spark: SparkSession, lake: Lake, dataset: str) -> DataFrame | None:
    """Every published valid row of a dataset (main of its valid table), or None when there is
    none yet (no table, or no batch on main: a held batch's rows wait on its audit branch)."""
    files = DatasetTables(lake, dataset).files(VALID)
    if not files:
        return None
    return spark.read.option("mergeSchema", "true").parquet(*files)


def mark_references(rows: DataFrame, keyed: list[tuple[Reference, DataFrame | None]]) -> DataFrame:
    """Add each reference's flag and fail the rows where it is set. A null value is the
    field's own rules' business, not the reference's. Keys are broadcast: a table of ids."""
    failed = F.col("_failed")
    for reference, keys in keyed:
        if keys is None:
            rows = rows.withColumn(reference.flag, F.lit(False))
        else:
            found = keys.select("_ref_key", F.lit(True).alias("_ref_found"))
            rows = (
                rows.join(F.broadcast(found), F.col(reference.column).cast("string") == F.col("_ref_key"),
                          "left")
                .withColumn(reference.flag,
                            F.col(reference.column).isNotNull() & F.col("_ref_found").isNull())
                .drop("_ref_key", "_ref_found")
            )
        failed = failed | F.col(reference.flag)
    return rows.withColumn("_failed", failed)


def reference_checks(references: list[Reference]) -> list[Check]:
    """The reasons of `mark_references`' flags (rule `<column>.references(<dataset>.<key>)`)."""
    return [
        check(F.col(ref.flag), "contract", ref.rule,
              f"{ref.column} is not among the published {ref.key} of {ref.dataset}"
              + (" (retried later)" if ref.retry else ""),
              column=ref.column, value=F.col(ref.column))
        for ref in references
    ]
