"""Reference checks: a field's value must exist among the published valid rows of another
dataset (orders' `customer_id` among the customers'). The first retryable rule.

A contract declares one in the field's pandera metadata:

    customer_id: Series[str] = pa.Field(..., metadata={
        "references": "customers.customer_id",
        "retry": {"max_attempts": 4, "backoff_s": 43200, "backoff_factor": 2},
    })

`retry` makes the rule retryable: a message failing it (and nothing else) is quarantined
as `retrying`, and the retry pass (foodtaster.engine.retry) checks it again later.
The job reads the referenced keys once (`reference_keys`, broadcast) and `mark_references`
adds one boolean a reference to the pass; `reference_checks` gives their reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import fsspec
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from foodtaster.engine.reasons import Check, check
from foodtaster.state.lake import Lake, exists


class ReferenceError(ValueError):
    """A `references` or `retry` declaration that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often a retryable rule is tried again: attempt n is due `backoff_s * factor**n`
    seconds after the previous one (the first after the message landed)."""

    max_attempts: int
    backoff_s: float
    backoff_factor: float = 2.0

    def wait_s(self, attempts: int) -> float:
        return self.backoff_s * self.backoff_factor ** attempts


@dataclass(frozen=True)
class Reference:
    column: str  # the field of this dataset
    dataset: str  # the referenced dataset
    key: str  # its field
    retry: RetryPolicy | None

    @property
    def rule(self) -> str:
        return f"{self.column}.references({self.dataset}.{self.key})"

    @property
    def flag(self) -> str:
        """The column `mark_references` adds: true where the value is not among the keys."""
        return f"_ref_missing_{self.column}"


def _policy(field: str, retry: Any) -> RetryPolicy | None:
    if retry is None:
        return None
    try:
        policy = RetryPolicy(int(retry["max_attempts"]), float(retry["backoff_s"]),
                             float(retry.get("backoff_factor", 2.0)))
    except (KeyError, TypeError, ValueError) as err:
        raise ReferenceError(
            f"{field}: retry must be {{max_attempts: int, backoff_s: seconds, backoff_factor: x}}: {err}"
        ) from err
    if policy.max_attempts < 1 or policy.backoff_s < 0 or policy.backoff_factor < 1:
        raise ReferenceError(f"{field}: need max_attempts >= 1, backoff_s >= 0, backoff_factor >= 1")
    return policy


def read_references(model: type) -> list[Reference]:
    """The reference checks a pandera model declares in its fields' metadata."""
    found = []
    for name, column in model.to_schema().columns.items():
        meta = column.metadata or {}
        if "references" not in meta:
            continue
        dataset, dot, key = str(meta["references"]).partition(".")
        if not dot or not dataset or not key:
            raise ReferenceError(f"{model.__name__}.{name}: references must be '<dataset>.<field>'")
        found.append(Reference(name, dataset, key, _policy(f"{model.__name__}.{name}", meta.get("retry"))))
    return found


def retryable(references: list[Reference]) -> dict[str, RetryPolicy]:
    """Rule id -> its retry policy, for the retryable rules among `references`."""
    return {ref.rule: ref.retry for ref in references if ref.retry is not None}


def reference_keys(spark: SparkSession, lake: Lake, reference: Reference) -> DataFrame | None:
    """The referenced dataset's published keys (distinct), or None when it never published:
    a reference to a dataset not yet in the lake is not checked (logged by the caller),
    so that setting up a new dataset never quarantines everything that points at it."""
    published = read_published(spark, lake, reference.dataset)
    if published is None or reference.key not in published.columns:
        return None
    return published.select(F.col(reference.key).cast("string").alias("_ref_key")).distinct()


def read_published(spark: SparkSession, lake: Lake, dataset: str) -> DataFrame | None:
    """Every published valid row of a dataset, or None when there is none yet (no partition,
    or only staged ones: Spark skips `_staging`, and cannot read a folder with no data)."""
    root = lake.zone("valid", dataset)
    fs, path = fsspec.core.url_to_fs(root)
    if not exists(root) or not fs.glob(f"{path}/batch_date=*/batch_id=*/*.parquet"):
        return None
    return spark.read.parquet(root)


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
