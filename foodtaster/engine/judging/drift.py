"""Drift counted in the pass: each message's unknown paths (as patterns), its producer and which
optional fields it carried, as three narrow columns of the kept pass (`flag_lines`), then one
aggregate over the kept pass that the job collects (small: a row a producer and path). The
messages are not read again: the strict parser already names every unknown key (`_unexpected` in
a strict scope, `_unknown` in one that keeps them) and every slot's status
(docs/decisions/022-drift-recorded-from-every-batch.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from foodtaster.contract.model import Contract
from foodtaster.contract.path import Path
from foodtaster.drift import UNKNOWN_PRODUCER, BatchDrift, PathCount
from foodtaster.engine.judging import layers

PATTERNS = "_drift_patterns"  # the message's distinct unknown paths as patterns; null without any
PRODUCER = "_drift_producer"  # the producer's name, from its slot
PRESENT = "_drift_present"  # bit i set: the i-th watched optional field was in the message
MAX_WATCHED = 63  # optional fields a long's bits can hold; the first ones by the contract's order
PATTERN = "_drift_pattern"


@dataclass(frozen=True)
class DriftSpec:
    """What the pass reads for drift: the producer's slot (None when the contract has no slot
    at that path: its producer is then unknown) and the optional fields watched."""

    producer: Path | None
    optional: tuple[Path, ...]


def drift_spec(contract: Contract, producer: Path) -> DriftSpec:
    slots = {f.path for f in contract.fields}
    optional = tuple(f.path for f in contract.fields if not f.required)[:MAX_WATCHED]
    return DriftSpec(producer if producer in slots else None, optional)


def columns(spec: DriftSpec) -> list[Column]:
    """The three drift columns, read from `layers.parse`'s rows."""
    empty = F.array().cast(ArrayType(StringType()))
    unexpected = F.transform(F.col(layers.UNEXPECTED), lambda e: e.getField("pattern"))
    kept = F.transform(F.col(layers.UNKNOWN),
                       lambda e: F.call_function(layers.PATH_PATTERN_FUNCTION, e.getField("path")))
    patterns = F.array_distinct(F.concat(F.coalesce(unexpected, empty), F.coalesce(kept, empty)))
    found = F.when(F.col(layers.UNEXPECTED).isNotNull() | F.col(layers.UNKNOWN).isNotNull(), patterns)
    producer = (F.col(layers.value_column(spec.producer)).cast(StringType()) if spec.producer
                else F.lit(None).cast(StringType()))
    present = F.lit(0).cast("long")
    for bit, path in enumerate(spec.optional):
        carried = F.col(layers.status_column(path)) != layers.FieldStatus.MISSING
        present = present + F.when(carried, F.lit(1 << bit)).otherwise(F.lit(0)).cast("long")
    return [found.alias(PATTERNS), producer.alias(PRODUCER), present.alias(PRESENT)]


def counted(kept: DataFrame, spec: DriftSpec) -> list[Row]:
    """One aggregate over the kept pass: a row a (producer, pattern) with its messages, and a
    row a producer (pattern null) with its messages and each watched field's messages. Each
    message gives one row, and one more a pattern it carried (the few that drift)."""
    every = F.concat(F.array(F.lit(None).cast(StringType())),
                     F.coalesce(F.col(PATTERNS), F.array().cast(ArrayType(StringType()))))
    rows = kept.select(PRODUCER, PRESENT, F.explode(every).alias(PATTERN))
    fields = [F.sum(F.when(F.col(PATTERN).isNull(), F.shiftright(PRESENT, bit).bitwiseAND(1)))
              .alias(f"_f{bit}") for bit in range(len(spec.optional))]
    return rows.groupBy(PRODUCER, PATTERN).agg(F.count(F.lit(1)).alias("messages"), *fields).collect()


def batch_drift(rows: list[Row], spec: DriftSpec, batch_id: str, batch_date: str) -> BatchDrift:
    """The collected aggregate as the batch's drift event."""
    producers: dict[str, int] = {}
    paths: list[PathCount] = []
    optional = {str(path): 0 for path in spec.optional}
    for row in rows:
        producer = row[PRODUCER] if row[PRODUCER] not in (None, "") else UNKNOWN_PRODUCER
        if row[PATTERN] is None:
            producers[producer] = producers.get(producer, 0) + row["messages"]
            for bit, path in enumerate(spec.optional):
                optional[str(path)] += int(row[f"_f{bit}"] or 0)
        else:
            paths.append(PathCount(row[PATTERN], producer, row["messages"]))
    merged: dict[tuple[str, str], int] = {}
    for p in paths:  # a null and an empty producer are both unknown
        merged[(p.pattern, p.producer)] = merged.get((p.pattern, p.producer), 0) + p.messages
    return BatchDrift(batch_id=batch_id, batch_date=batch_date, messages=sum(producers.values()),
                      producers=producers,
                      paths=tuple(PathCount(pt, pr, n) for (pt, pr), n in sorted(merged.items())),
                      optional=optional)
