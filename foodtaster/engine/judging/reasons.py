"""The reason record: one shape for every layer.

A check is a rule on a row: a boolean `failed` column and a `reason` column
(one reason where it fails, none elsewhere). A row's `reasons` is the concat of
its checks' reasons, so the split into valid and quarantine is one filter on
`size(reasons) == 0`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

LAYERS = ("bytes", "parse", "contract", "group", "registry", "crash", "batch")
VALUE_MAX_CHARS = 200

REASON = StructType(
    [
        StructField("layer", StringType(), True),
        StructField("rule", StringType(), True),
        StructField("column", StringType(), True),
        StructField("message", StringType(), True),
        StructField("value", StringType(), True),
    ]
)
REASONS = ArrayType(REASON, containsNull=True)


def _text(value: Column | str | None) -> Column:
    if value is None:
        return F.lit(None).cast("string")
    return F.lit(value) if isinstance(value, str) else value.cast("string")


def _record(layer: str, rule: str | Column, message: Column | str, column: str | Column | None,
            value: Column | None) -> Column:
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; one of {LAYERS}")
    cut = None if value is None else F.substring(value.cast("string"), 1, VALUE_MAX_CHARS)
    return F.struct(
        F.lit(layer).alias("layer"),
        F.lit(rule).alias("rule"),
        (column if isinstance(column, Column) else F.lit(column)).cast("string").alias("column"),
        _text(message).alias("message"),
        _text(cut).alias("value"),
    )


@dataclass(frozen=True)
class Check:
    """One rule on a row: where it fails, and the reason it gives there."""

    failed: Column  # true where the rule fails; never null
    reason: Column  # a one-reason array where it fails, else an empty one


def check(
    failed: Column,
    layer: str,
    rule: str | Column,
    message: Column | str,
    column: str | Column | None = None,
    value: Column | None = None,
) -> Check:
    """A rule's check; a null `failed` counts as passed.

    Reasons are arrays, not nullable structs, so that `collect` is a plain `concat`: Spark
    generates code for it, where filtering nulls out with a lambda would run interpreted.
    """
    failed = F.coalesce(failed, F.lit(False))
    record = _record(layer, rule, message, column, value)
    return Check(failed, F.when(failed, F.array(record)).otherwise(F.array().cast(REASONS)).cast(REASONS))


def any_failed(checks: Sequence[Check]) -> Column:
    """True where any check fails: one cheap boolean a row, before any reason is built."""
    if not checks:
        return F.lit(False)
    if len(checks) == 1:
        return checks[0].failed
    middle = len(checks) // 2  # a balanced tree keeps Spark's expression depth small
    return any_failed(checks[:middle]) | any_failed(checks[middle:])


def collect(checks: Iterable[Column | Check]) -> Column:
    """The reasons of a list of checks, as one array column."""
    reasons = [c.reason if isinstance(c, Check) else c for c in checks]
    if not reasons:
        return F.array().cast(REASONS)
    return F.concat(*reasons).cast(REASONS)
