"""Judging: the pure DataFrame -> DataFrame functions that give each message its verdict.

The job (`foodtaster.engine.batch.job`), redrive, retry and the benchmark judge through these, so a
message is judged the same whichever way it comes: `flag_lines` is the one pass over every
message (typed by the strict parser, each rule one boolean), `decide_outcomes` settles copies
of a key, `with_reasons` says why for the few rows that failed, and `valid_rows`,
`quarantine_rows` and `unreadable_rows` give the columns each partition is written with.
Nothing here reads or writes the lake.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, TimestampType

from foodtaster.contract.model import Contract, ContractError, Key
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers, listed, parser_spec, python_checks, row_checks, schema_judge
from foodtaster.engine.judging.drift import DriftSpec
from foodtaster.engine.judging.drift import columns as drift_columns
from foodtaster.engine.judging.duplicates import mark_duplicates
from foodtaster.engine.judging.guard import DEFAULT_BUDGET, Budget
from foodtaster.engine.judging.reasons import REASONS, Check, any_failed, check, collect
from foodtaster.lineage import LINEAGE

VALID, QUARANTINED, DUPLICATE = "valid", "quarantined", "duplicate"

# What `explain` reads, in one struct a row (`_verdict_columns`), null on a row that passed the
# pass: such a row has no field reasons to give, even when it is failed later (held for its
# group, a missing reference, a conflicting duplicate). Most rows pass, so the kept pass that
# the job scans in full is narrower (docs/decisions/002-one-cheap-pass-then-explain-the-failed.md).
VERDICT = "_verdict"


def flag_lines(
    lines: DataFrame, contract: Contract, max_message_bytes: int, poison: DataFrame | None = None,
    budget: Budget = DEFAULT_BUDGET, drift: DriftSpec | None = None,
) -> DataFrame:
    """Lines -> one row a message: its lineage, `_raw`, typed fields, `_failed`, and, on a row
    that failed, what the strict parser said (`VERDICT`: `_line_reasons`, each field's status
    and offending text) for `explain`. With a `drift` spec, the message's drift columns too
    (`foodtaster.engine.judging.drift`), from the same parse.

    The pass over every message: the JVM parser types each field, each rule is one boolean,
    and no reason is built here; `explain` says why, later, for the few rows that failed.
    With the poison list (`listed.poison_frame`), a listed row is marked (`listed.mark_listed`)
    and failed without being judged: no Python check is ever given it, so a message that
    crashed one once is not met again. `budget`: what a Python check may spend on a message.
    """
    parsed, skip = parse_marking_listed(lines, contract, max_message_bytes, poison)
    marks = [] if skip is None else [listed.ENTRY, listed.WHY, listed.SOURCE]
    checked = python_checks.with_python_checks(parsed, contract, skip, budget)
    failed = layers.line_failed() | any_failed(row_checks.field_checks(contract))
    if skip is not None:
        failed = skip | failed
    keep = [c for c in lines.columns if c != layers.TEXT]
    verdict = F.when(failed, F.struct(*_verdict_columns(contract))).alias(VERDICT)
    unknown = [layers.UNKNOWN] if contract.keeps_unknown else []
    drifted = [] if drift is None else drift_columns(drift)
    return checked.select(*keep, *row_checks.message_columns(contract), *unknown, verdict, *marks,
                          *drifted, failed.alias("_failed"))


def parse_marking_listed(
    lines: DataFrame, contract: Contract, max_message_bytes: int, poison: DataFrame | None
) -> tuple[DataFrame, Column | None]:
    """`layers.parse`, and with the poison list each row's entry (`listed.mark_listed`, by its
    bytes or its typed unique key); returns the rows and the column true on a listed row, or
    None without a list."""
    parsed = layers.parse(lines, parser_spec.parser_input(contract, max_message_bytes))
    if contract.judged_by_schema:
        parsed = schema_judge.with_schema_reasons(parsed, contract)
    if poison is None:
        return parsed, None
    key = unique_key(contract)
    parsed_key = layers.key_column(key, lambda p: F.col(layers.value_column(p))) if key else None
    marked = listed.mark_listed(parsed, poison, parsed_key)
    return marked, F.col(listed.ENTRY).isNotNull()


def _verdict_columns(contract: Contract) -> list[str]:
    """What `VERDICT` holds: the parser's statuses, carried so the reasons need no second
    parse; a slot's parsed value only where the written column differs from it (a timestamp
    read from a string, an array's elements); each Python check's verdict, so that no check
    runs twice."""
    columns = [layers.LINE_REASONS, layers.UNEXPECTED]
    if contract.judged_by_schema:
        columns.append(schema_judge.SCHEMA_REASONS)
    for rule in contract.fields:
        columns += [layers.status_column(rule.path), layers.text_column(rule.path)]
        if row_checks.carried_value(rule):
            columns.append(layers.value_column(rule.path))
    return columns + [layers.python_check_column(c) for c in contract.python_checks]


def explain(rows: DataFrame, contract: Contract, max_message_bytes: int) -> DataFrame:
    """Add `_reasons` to flagged rows: every failing rule of the layer that failed, built from
    the statuses `flag_lines` carried in `VERDICT` (no second parse); none on a row that passed
    the pass, whatever failed it after. `max_message_bytes` is the one the rows were flagged
    with: the bytes layer's reasons were given by then."""
    typed = [layers.written_column(f.path).alias(layers.value_column(f.path)) for f in contract.fields
             if not f.is_object and not row_checks.carried_value(f)]
    typed += [layers.written_column(path).alias(layers.written_elements_column(path))
              for path in sorted(parser_spec.judged_arrays(contract), key=str)]
    carried = [F.col(VERDICT).getField(name).alias(name) for name in _verdict_columns(contract)]
    reasons = (
        F.when(F.col(VERDICT).isNull(), F.array().cast(REASONS))  # passed the pass: no field reasons
        .when(layers.line_failed(), F.col(layers.LINE_REASONS))
        .otherwise(collect(row_checks.field_checks(contract)))
    )
    named = map(layers.named, rows.columns)
    return rows.select("*", *typed, *carried).select(*named, reasons.alias("_reasons"))


def validate_lines(lines: DataFrame, contract: Contract, max_message_bytes: int) -> DataFrame:
    """`flag_lines` and `explain` on every row: the whole verdict of each message."""
    return explain(flag_lines(lines, contract, max_message_bytes), contract, max_message_bytes)


def unique_key(contract: Contract) -> Key | None:
    """The message's unique key: a key of several fields, or the one unique field; two unique
    fields are two keys, refused by name (write them as one key of several fields)."""
    if contract.key:
        if contract.unique_fields:
            raise ContractError(f"{contract.name}: a key of several fields and unique fields "
                                f"{[str(p) for p in contract.unique_fields]}: one key is supported")
        return Key(contract.key)
    keys = contract.unique_fields
    if len(keys) > 1:
        raise ContractError(f"{contract.name}: one unique field is supported, got {keys}; a key of "
                            "several fields is one key (pandera: Config.unique = [...])")
    return Key((keys[0],)) if keys else None


def decide_outcomes(
    flagged: DataFrame, contract: Contract, *, every_copy_here: bool = False
) -> DataFrame:
    """Add `_outcome` (valid, quarantined or duplicate) and `_conflict` (a conflicting
    duplicate's reason, else none) to rows from `flag_lines`; `every_copy_here` as in
    `mark_duplicates`."""
    key = unique_key(contract)
    if key:
        marked = mark_duplicates(flagged, key, every_copy_here=every_copy_here)
    else:
        marked = flagged.withColumn("_redelivery", F.lit(False)).withColumn(
            "_conflict", F.array().cast(REASONS)
        )
    outcome = (
        F.when(F.col("_redelivery"), DUPLICATE)
        .when(F.col("_failed") | (F.size("_conflict") > 0), QUARANTINED)
        .otherwise(VALID)
    )
    return marked.withColumn("_outcome", outcome).drop("_redelivery")


def with_reasons(rows: DataFrame, contract: Contract, max_message_bytes: int,
                 extra: Sequence[Check] = ()) -> DataFrame:
    """Add `reasons` to rows from `decide_outcomes`: why each failed, its conflict if any, and
    the `extra` checks of columns joined in the pass (references, the group hold)."""
    explained = explain(rows, contract, max_message_bytes)
    reasons = F.concat(F.col("_reasons"), F.col("_conflict"), *(c.reason for c in extra)).cast(REASONS)
    if listed.ENTRY in rows.columns:  # a listed message's one reason is its entry's why
        reasons = listed.unless_listed(reasons).cast(REASONS)
    return explained.withColumn("reasons", reasons).drop("_reasons", "_conflict")


def with_outcome(rows: DataFrame, outcome: str) -> DataFrame:
    """The rows from `decide_outcomes` that have one outcome (valid, quarantined, duplicate)."""
    return rows.where(F.col("_outcome") == outcome)


def _typed_fields(contract: Contract) -> list[Column]:
    return [layers.written_column(Path.of(key)) for key in row_checks.message_keys(contract)]


def valid_rows(valid: DataFrame, contract: Contract, *extra: str) -> DataFrame:
    """Valid rows (`with_outcome(rows, VALID)`) as written: the typed message, the fields the
    contract does not name where it keeps them (`_unknown`: each path, such as
    `data.lines[1].discount`, to its JSON text as written), lineage (and
    the `extra` columns a writer partitions by, such as a redrive's `batch_date`)."""
    return valid.select(*_typed_fields(contract), *_unknown(contract), *LINEAGE, *extra)


def _unknown(contract: Contract) -> list[Column]:
    if not contract.keeps_unknown:
        return []
    return [F.map_from_entries(F.coalesce(F.col(layers.UNKNOWN), F.array().cast(layers.UNKNOWN_TYPE)))
            .alias(layers.UNKNOWN)]


def quarantine_rows(quarantined: DataFrame, contract: Contract, max_message_bytes: int,
                    extra: Sequence[Check] = ()) -> DataFrame:
    """Quarantined rows (`with_outcome(rows, QUARANTINED)`) as written: `_raw`, `reasons`,
    the fields that could be parsed, the fields the contract does not name where it keeps
    them (`_unknown`, as in valid: a row published later from the quarantine, such as a
    message held for its conversation, keeps them), and lineage."""
    return with_reasons(quarantined, contract, max_message_bytes, extra).select(
        "_raw", "reasons", *_typed_fields(contract), *_unknown(contract), *LINEAGE
    )


def unreadable_rows(items: DataFrame, batch_id: str, ingested_at: datetime) -> DataFrame:
    """What the reader never held whole (`path`, `line`, `content`, `rule`, `reason`): files the
    landing could not read or would not hold (`line` null), lines too large to read. One
    quarantine row each; `content` is their first bytes, the whole is in raw/."""
    reasons = check(F.lit(True), "bytes", F.col("rule"), F.col("reason")).reason
    return items.select(
        F.col("content").alias("_raw"),
        reasons.alias("reasons"),
        F.lit(batch_id).alias("_batch_id"),
        F.col("path").alias("_source_file"),
        F.col("line").cast(LongType()).alias("_line_number"),
        F.lit(ingested_at).cast(TimestampType()).alias("_ingested_at"),
    )

