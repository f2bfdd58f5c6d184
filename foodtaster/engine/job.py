"""Taste one batch: read, validate every message, split, write, measure, gate.

`run_batch` is the only function here that does I/O; everything it calls on
DataFrames is a pure transformation that a test can run on five rows.
"""

from __future__ import annotations

import base64
import time
import urllib.parse
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import fsspec
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, TimestampType

from foodtaster.engine import batch_counts, crash, ingest, layers, listed, rules, second_chances
from foodtaster.engine.duplicates import key_hash, mark_duplicates
from foodtaster.engine.reasons import REASONS, Check, any_failed, check, collect
from foodtaster.engine.suspects import Watch, bytes_of_failed_only, cleared, suspects, with_bytes_read_again
from foodtaster.logs import batch_logger
from foodtaster.ops.policy import decide
from foodtaster.registry import DatasetConfig
from foodtaster.sources.raw_batch import UNREADABLE_DIR, UNREADABLE_RULE
from foodtaster.state.lake import (
    Lake,
    exists,
    fault_point,
    new_run_id,
    read_json,
    remove_dir,
    swap_in,
    write_json,
)
from foodtaster.state.lease import batch_lease
from foodtaster.state.poison import PoisonList, Seen, fingerprint
from foodtaster.state.publish import publish_batch

LINEAGE = ["_batch_id", "_source_file", "_line_number", "_ingested_at"]
SAMPLE_COUNT = 5
SAMPLE_MAX_CHARS = 500
VALID, QUARANTINED, DUPLICATE = "valid", "quarantined", "duplicate"

# What `explain` reads, in one struct a row (`_verdict_columns`), null on a row that passed the
# pass: such a row has no field reasons to give, even when it is failed later (held for its
# group, a missing reference, a conflicting duplicate). Most rows pass, so the kept pass that
# the job scans in full four times is narrower: at 500k, the job's CPU without the gate fell by 12%
# (25.7 to 22.5 s, mean of three interleaved warm runs; bench/README.md).
VERDICT = "_verdict"


def flag_lines(
    lines: DataFrame, contract: rules.Contract, max_message_bytes: int, poison: DataFrame | None = None
) -> DataFrame:
    """Lines -> one row a message: its lineage, `_raw`, typed fields, `_failed`, and, on a row
    that failed, what the strict parser said (`VERDICT`: `_line_reasons`, each field's status
    and offending text) for `explain`.

    The pass over every message: the JVM parser types each field, each rule is one boolean,
    and no reason is built here; `explain` says why, later, for the few rows that failed.
    With the poison list (`listed.poison_frame`), a listed row is marked (`listed.mark_listed`)
    and failed without being judged: no Python check is ever given it, so a message that
    crashed one once is not met again.
    """
    parsed, skip = _parse_marking_listed(lines, contract, max_message_bytes, poison)
    marks = [] if skip is None else [listed.ENTRY, listed.WHY, listed.SOURCE]
    checked = rules.with_python_checks(parsed, contract, skip)
    failed = layers.line_failed() | any_failed(rules.field_checks(contract))
    if skip is not None:
        failed = skip | failed
    keep = [c for c in lines.columns if c != layers.TEXT]
    verdict = F.when(failed, F.struct(*_verdict_columns(contract))).alias(VERDICT)
    return checked.select(*keep, *rules.field_outputs(contract), verdict, *marks, failed.alias("_failed"))


def _parse_marking_listed(
    lines: DataFrame, contract: rules.Contract, max_message_bytes: int, poison: DataFrame | None
) -> tuple[DataFrame, Column | None]:
    """`layers.parse`, and with the poison list each row's entry (`listed.mark_listed`, by its
    bytes or its typed unique key); returns the rows and the column true on a listed row, or
    None without a list."""
    parsed = layers.parse(lines, rules.parse_fields(contract), max_message_bytes)
    if poison is None:
        return parsed, None
    key = unique_key(contract)
    marked = listed.mark_listed(parsed, poison, layers.value_column(key) if key else None)
    return marked, F.col(listed.ENTRY).isNotNull()


def _verdict_columns(contract: rules.Contract) -> list[str]:
    """What `VERDICT` holds: the parser's statuses, carried so the reasons need no second
    parse; a field's typed value only where the written column differs from it (a timestamp
    read from a string); each Python check's verdict, so that no check runs twice."""
    columns = [layers.LINE_REASONS]
    for rule in contract.fields:
        columns += [layers.status_column(rule.name), layers.text_column(rule.name)]
        if rule.output_type != rule.json_type.spark_type:
            columns.append(layers.value_column(rule.name))
    return columns + [c.column for c in contract.python_checks]


def explain(rows: DataFrame, contract: rules.Contract, max_message_bytes: int) -> DataFrame:
    """Add `_reasons` to flagged rows: every failing rule of the layer that failed, built from
    the statuses `flag_lines` carried in `VERDICT` (no second parse); none on a row that passed
    the pass, whatever failed it after. `max_message_bytes` is the one the rows were flagged
    with: the bytes layer's reasons were given by then."""
    typed = [F.col(f.name).alias(layers.value_column(f.name)) for f in contract.fields
             if f.output_type == f.json_type.spark_type]
    carried = [F.col(VERDICT).getField(name).alias(name) for name in _verdict_columns(contract)]
    reasons = (
        F.when(F.col(VERDICT).isNull(), F.array().cast(REASONS))  # passed the pass: no field reasons
        .when(layers.line_failed(), F.col(layers.LINE_REASONS))
        .otherwise(collect(rules.field_checks(contract)))
    )
    return rows.select("*", *typed, *carried).select(*rows.columns, reasons.alias("_reasons"))


def validate_lines(lines: DataFrame, contract: rules.Contract, max_message_bytes: int) -> DataFrame:
    """`flag_lines` and `explain` on every row: the whole verdict of each message."""
    return explain(flag_lines(lines, contract, max_message_bytes), contract, max_message_bytes)


def unique_key(contract: rules.Contract) -> str | None:
    keys = contract.unique_fields
    if len(keys) > 1:
        raise rules.ContractError(f"{contract.name}: one unique field is supported, got {keys}")
    return keys[0] if keys else None


def decide_outcomes(
    flagged: DataFrame, contract: rules.Contract, *, every_copy_here: bool = False
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


def with_reasons(rows: DataFrame, contract: rules.Contract, max_message_bytes: int,
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


def _typed_fields(contract: rules.Contract) -> list[Column]:
    return [F.col(f.name).cast(f.output_type).alias(f.name) for f in contract.fields]


def valid_rows(valid: DataFrame, contract: rules.Contract, *extra: str) -> DataFrame:
    """Valid rows (`with_outcome(rows, VALID)`) as written: typed fields and lineage (and the
    `extra` columns a writer partitions by, such as a redrive's `batch_date`)."""
    return valid.select(*_typed_fields(contract), *LINEAGE, *extra)


def quarantine_rows(quarantined: DataFrame, contract: rules.Contract, max_message_bytes: int,
                    extra: Sequence[Check] = ()) -> DataFrame:
    """Quarantined rows (`with_outcome(rows, QUARANTINED)`) as written: `_raw`, `reasons`,
    the fields that could be parsed, and lineage."""
    return with_reasons(quarantined, contract, max_message_bytes, extra).select(
        "_raw", "reasons", *_typed_fields(contract), *LINEAGE
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


def _escape_sample(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
    return text if len(text) <= SAMPLE_MAX_CHARS else text[:SAMPLE_MAX_CHARS] + "…"


@dataclass(frozen=True)
class BatchRun:
    """One batch to taste. `publish=False` leaves valid rows staged for the pipeline's gate task.

    `run_id` names this run's own output paths and its hold on the batch's lease.
    """

    config: DatasetConfig
    input_path: str
    lake: Lake
    batch_id: str
    batch_date: str
    publish: bool = True
    gate: bool = True
    run_id: str = field(default_factory=new_run_id)


class CountsDoNotAddUp(RuntimeError):
    """Rows went missing (or appeared) between reading and writing: nothing is swapped in."""


def _manifest(input_path: str) -> dict[str, Any] | None:
    path = input_path.rstrip("/") + "/_manifest.json"
    return read_json(path) if exists(path) else None


def run_batch(spark: SparkSession, run: BatchRun) -> dict[str, Any]:
    """Read, validate, write the partitions and the summary; returns the summary.

    Under the batch's lease: rows are written under the run's own paths, counted from what
    was written, and swapped in (quarantine; valid to staged, then published) only when
    every message is accounted for. The summary is the last thing written.
    """
    with batch_lease(run.lake, run.config.name, run.batch_id, run.run_id):
        check_not_redriven(run.lake, run.config.name, run.batch_id)
        _clear_runs(run)  # what killed runs of this batch left; no other run is live
        try:
            return _run_isolating_crashes(spark, run)
        finally:
            _clear_runs(run)


class BatchWasRedriven(RuntimeError):
    """A rerun of a batch some rows of which a redrive published elsewhere: it would publish them twice."""


def check_not_redriven(lake: Lake, dataset: str, batch_id: str) -> None:
    """Refuse to rerun a batch whose rows were redriven (foodtaster.engine.redrive): judged
    again, they would land in the batch's own valid partition too."""
    from foodtaster.state.dispositions import DUPLICATE, REDRIVEN, Dispositions

    counts = Dispositions(lake, dataset).state().counts(batch_id)
    moved = counts.get(REDRIVEN, 0) + counts.get(DUPLICATE, 0)
    if moved:
        raise BatchWasRedriven(
            f"{dataset} batch {batch_id}: {moved} of its quarantined rows were redriven (published "
            "or found duplicate later); rerunning it would publish them twice. Redrive its "
            "remaining quarantined rows instead (`foodtaster redrive --batch ...`)"
        )


def _run_isolating_crashes(spark: SparkSession, run: BatchRun) -> dict[str, Any]:
    """`_run_batch`; when a message crashes its one pass (`crash.data_crash`), find it
    (`crash.isolate`), list it (source `crash`) and run the batch again, which quarantines
    it as `crash.isolated` unjudged. At most `max_crash_isolations` messages a run; past
    that, TooManyCrashes names the ones found (they stay listed). Any other failure goes
    up as it is: the task fails and Airflow retries it.
    """
    config = run.config
    log = batch_logger(__name__, config.name, run.batch_id)
    isolated: list[crash.Isolated] = []
    while True:
        try:
            return _run_batch(spark, run, isolated)
        except Exception as err:
            crashed = crash.data_crash(err)
            if crashed is None:
                raise
            found = ", ".join(f"{i.source_file} line {i.line_number}" for i in isolated) or "none"
            log.event("crashed", error=crashed.why, isolated_so_far=len(isolated), run_id=run.run_id)
            if len(isolated) >= config.max_crash_isolations:
                raise crash.TooManyCrashes(
                    f"{config.name} batch {run.batch_id}: more than max_crash_isolations="
                    f"{config.max_crash_isolations} messages crash the check ({crashed.why}); "
                    f"isolated and listed: {found}. Fix the check, or raise the bound in pipeline.yaml"
                ) from err
            more = _isolate(spark, run, config.max_crash_isolations - len(isolated), log)
            if not more:
                raise  # no one message crashes alone: not the data's doing
            isolated += more


def _isolate(spark: SparkSession, run: BatchRun, limit: int, log: Any) -> list[crash.Isolated]:
    """Find up to `limit` crashing messages of the batch and put each on the poison list.

    Only a Python check can crash on data (`crash.data_crash`), so each step of the search
    runs only the Python checks, on values the strict parser typed once a file: a small plan,
    quick to run again and again on fewer lines.
    """
    config, lake = run.config, run.lake
    contract = rules.read_contract(config.load_contract())
    poison_list = PoisonList(lake, config.name)
    entries = poison_list.entries()
    poison = listed.poison_frame(spark, entries) if entries else None
    verdicts = [F.count_if(F.col(c.column)) for c in contract.python_checks]

    def judge(rows: DataFrame) -> None:  # every Python check on these rows, run to the end
        rows = rules.with_python_checks(rows, contract, F.col(SKIP))
        rows.agg(*verdicts).collect()

    typed = _typed_for_checks(_numbered_lines(spark, run), contract, config.max_message_bytes, poison)
    found = crash.isolate(typed, judge, limit,
                          lambda event, **fields: log.event(event, run_id=run.run_id, **fields))
    for item in found:
        entry = poison_list.add(
            "fingerprint", fingerprint(item.raw), item.crash.why, "crash",
            added_by=f"foodtaster run {run.run_id}",
            first_seen=Seen(run.batch_id, item.source_file, item.line_number), size=len(item.raw),
        )
        log.event("crash_listed", entry=entry.id, file=item.source_file, line=item.line_number,
                  error=item.crash.why)
    return found


SKIP = "_skip"


def _typed_for_checks(
    lines: DataFrame, contract: rules.Contract, max_message_bytes: int, poison: DataFrame | None
) -> DataFrame:
    """Lines with what the Python checks read: the parser's typed values and `_skip` (listed,
    so never given to a check), as `flag_lines` gives them."""
    parsed, skip = _parse_marking_listed(lines, contract, max_message_bytes, poison)
    values = sorted({layers.value_column(c.field) for c in contract.python_checks})
    listed_row = F.lit(False) if skip is None else skip
    return parsed.select("_raw", "_source_file", "_line_number", *values, listed_row.alias(SKIP))


def _numbered_lines(spark: SparkSession, run: BatchRun) -> DataFrame:
    """The batch's messages with `_raw`, `_source_file` and `_line_number`, read as the job
    reads them, without judging them."""
    manifest = _manifest(run.input_path)
    broker = _broker(manifest)
    if broker:
        return ingest.read_messages(spark, run.input_path, broker["stream"])
    lines = ingest.read_lines(spark, run.input_path, run.config.line_read_bytes if manifest else None)
    skipped = ingest.skipped_lines(spark, (manifest or {}).get("files", []))
    return ingest.with_line_numbers(lines, ingest.split_offsets(lines).collect(), skipped)


def _run_batch(spark: SparkSession, run: BatchRun, isolated: list[crash.Isolated]) -> dict[str, Any]:
    config, lake = run.config, run.lake
    log = batch_logger(__name__, config.name, run.batch_id)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    contract = rules.read_contract(config.load_contract())
    entries = PoisonList(lake, config.name).entries()  # read once; small, so broadcast
    poison = listed.poison_frame(spark, entries) if entries else None
    extras = second_chances.prepare(spark, lake, config, log)  # referenced keys, open groups: once
    manifest = _manifest(run.input_path)
    log.event("started", input=run.input_path, contract=config.contract, run_id=run.run_id)

    # What is kept in Spark's memory for this batch is freed on the way out, even when a step fails.
    with ExitStack() as held:
        broker = _broker(manifest)
        if broker:  # one Parquet row a message, its lineage the broker's
            lines = ingest.read_messages(spark, run.input_path, broker["stream"])
        else:  # without a manifest nobody counted the lines the reader would skip: hold them all
            lines = ingest.read_lines(spark, run.input_path, config.line_read_bytes if manifest else None)
        # The one pass over every message; all that follows reads this copy, not the input, but for
        # the bytes of the few suspects that passed it (`suspects.with_bytes_read_again`).
        the_pass = extras.mark(flag_lines(lines, contract, config.max_message_bytes, poison))
        if run.gate:
            # Great Expectations is imported while Spark runs the pass, after its plan is built:
            # started with the batch, the import's Python held the GIL against the Py4J calls
            # that build the plan (a fresh process at 2M: the first Spark job 4.7 s after the
            # batch began without the gate, 7.9 s with it).
            from foodtaster.engine.gate import import_ahead

            import_ahead()
        # How many messages the pass holds, counted while it is kept: the batch's counts below
        # shuffle into a task a `KEYS_PER_TASK` of them. Observed last: Spark generates no code for
        # an observation, so one between two projections split the pass's generated code in two
        # and copied every row once more (2M: the pass kept in 4.5 s against 4.3 s; bench/README.md).
        observed = Observation()
        kept = _keep(bytes_of_failed_only(the_pass).observe(observed, F.count(F.lit(1)).alias("rows")), held)
        fault_point("flagged")
        key = unique_key(contract)
        group_hash = extras.group_hash()
        # The file splits, and what other rows can change as sets of hashes (the key hashes that
        # repeat, the failed rows' groups), in one scan of the kept pass (`batch_counts`). The
        # lines read and the files' newest time come from the splits, and the writes number the
        # lines from them by row id (`ingest.with_line_numbers`). The counts are kept, not cached:
        # two sets drawn from them are joined back onto the kept pass, and Spark renames the second
        # copy of a relation in one plan. Cached, that copy missed the cache, and the batch was
        # counted again in the suspects' step and in the valid write (2M: about 0.6 s each;
        # bench/README.md).
        with batch_counts.shuffled_into(spark, batch_counts.partitions(observed.get["rows"])):
            counts = _keep(batch_counts.batch_counts(kept, key, group_hash), held)
            per_split = batch_counts.split_offsets(counts)
            split_rows = per_split.collect()
        ingested_at = _ingested_at(manifest, split_rows)
        lines_read = sum(row["_split_lines"] for row in split_rows)
        too_large = sum(len(f.get("too_large", [])) for f in (manifest or {}).get("files", []))
        # before anything is written
        _check_manifest(manifest, lines_read + too_large, config.name, run.batch_id)
        timings["read_validate_s"] = time.perf_counter() - started

        mark = time.perf_counter()
        # The rows the repeated keys and the failed groups watch, and the failed rows, are the
        # suspects (a few percent), kept and judged alone; every other row is valid as it
        # stands, and is written without a join but its line numbers.
        watches: list[Watch] = []
        if key is not None:
            watches.append((key_hash(key), batch_counts.repeated_key_hashes(counts)))
        if group_hash is not None:
            failed_groups = batch_counts.failed_group_hashes(counts)
            watches.append(extras.group_watch(group_hash, failed_groups, run.batch_id))
        # The suspects are kept once without their bytes, then judged with the bytes read again in
        # the same Spark job that keeps the judgement, which counts the duplicates it drops.
        bare = _keep(suspects(kept, watches), held)
        flagged = extras.hold(with_bytes_read_again(bare, lines), run.batch_id)

        skipped = None if broker else ingest.skipped_lines(spark, (manifest or {}).get("files", []))

        def numbered(rows: DataFrame) -> DataFrame:  # a broker message's number is its sequence
            if broker:
                rows = rows.drop("_split_start")
            else:
                rows = ingest.with_line_numbers(rows, split_rows, skipped)
            return rows.select(
                "*", F.lit(run.batch_id).alias("_batch_id"),
                F.lit(ingested_at).cast(TimestampType()).alias("_ingested_at"),
            )

        # Counted where they are dropped: every byte-identical copy but the first of a key.
        dropped = Observation()
        judged = _keep(numbered(decide_outcomes(flagged, contract, every_copy_here=True)).observe(
            dropped, F.count_if(F.col("_outcome") == DUPLICATE).alias(DUPLICATE)), held)
        duplicates_dropped = dropped.get[DUPLICATE]
        timings["duplicates_s"] = time.perf_counter() - mark
        mark = time.perf_counter()
        quarantine = quarantine_rows(with_outcome(judged, QUARANTINED), contract, config.max_message_bytes,
                                     extras.checks())
        unread = _unread_items(spark, run.input_path, manifest, config)
        if unread is not None:
            quarantine = quarantine.unionByName(
                unreadable_rows(unread, run.batch_id, ingested_at), allowMissingColumns=True
            )
        valid = valid_rows(numbered(cleared(kept, watches)), contract).unionByName(
            valid_rows(with_outcome(judged, VALID), contract))

        run_valid, run_quarantine = (
            lake.run_output(zone, config.name, run.batch_date, run.batch_id, run.run_id)
            for zone in ("valid", "quarantine")
        )
        valid.write.mode("overwrite").parquet(run_valid)
        quarantine.write.mode("overwrite").parquet(run_quarantine)
        timings["write_s"] = time.perf_counter() - mark
        fault_point("written")

        # Counted from what was written: the valid count is in the Parquet footers, the quarantine
        # is small. A row lost on the way (a folder removed under the job) fails the batch here.
        mark = time.perf_counter()
        valid = spark.read.parquet(run_valid)
        written_quarantine = spark.read.parquet(run_quarantine)
        valid_count = valid.count()
        quarantined, reason_counts = quarantine_counts(written_quarantine)
        messages = lines_read + too_large + len((manifest or {}).get("unreadable", []))
        _check_accounting(messages, valid_count, quarantined, duplicates_dropped, config.name,
                          run.batch_id)
        samples = _samples(written_quarantine)
        chances = extras.count(written_quarantine, run.batch_id, reason_counts)
        timings["metrics_s"] = time.perf_counter() - mark
    report = lake.report(config.name, run.batch_id)

    # The gate reads only the written valid rows, so it runs once what the batch kept is freed:
    # at 2M, 5.5-6.5 s against 6.9-7.2 s with the kept pass still held (bench/README.md).
    mark = time.perf_counter()
    if run.gate:
        from foodtaster.engine.gate import run_gate

        gate = run_gate(valid, config.suite_path(), config.name, run.batch_id, run.batch_date,
                        data_docs_uri=report + "/data_docs")
    else:
        gate = {"suite": None, "passed": True, "skipped": True, "failed": [], "results": []}
    timings["gate_s"] = time.perf_counter() - mark

    staged = lake.staged_valid(config.name, run.batch_date, run.batch_id)
    quarantine_path = lake.quarantine(config.name, run.batch_date, run.batch_id)
    summary: dict[str, Any] = {
        "dataset": config.name, "batch_id": run.batch_id, "batch_date": run.batch_date,
        "run_id": run.run_id, "contract": config.contract, "input": run.input_path,
        "messages": messages, "valid": valid_count, "quarantined": quarantined,
        "duplicates_dropped": duplicates_dropped,
        # Known before this run: listed by anyone, or isolated by an earlier run's crash.
        "listed": reason_counts.get(listed.RULE, 0) + reason_counts.get(listed.CRASH_RULE, 0) - len(isolated),
        "crash_isolated": [item.as_dict() for item in isolated],
        "quarantine_rate": round(quarantined / messages, 6) if messages else 0.0,
        "reasons": reason_counts, "samples": samples, "gate": gate, **chances,
        "paths": {
            "staged_valid": staged, "valid": lake.valid(config.name, run.batch_date, run.batch_id),
            "quarantine": quarantine_path, "report": report, "data_docs": gate.get("data_docs"),
        },
        "ingested_at": ingested_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    verdict = decide(summary, config)
    summary["verdict"] = verdict.as_dict()
    # Swapped in whole: a reader sees this run's partition or the one before, never neither.
    swap_in(run_quarantine, quarantine_path)
    fault_point("quarantine_swapped")
    swap_in(run_valid, staged)
    summary["published"] = False
    if run.publish and verdict.publish:
        publish_batch(lake, config.name, run.batch_date, run.batch_id)
        summary["published"] = True
    # A held batch leaves an earlier publication of it in place: holding never deletes data.
    groups_open = extras.record(lake, run.batch_id)  # after the data, as all state
    if groups_open is not None:
        summary["groups_open"] = groups_open
    timings["total_s"] = time.perf_counter() - started
    summary["timings"] = {k: round(v, 3) for k, v in timings.items()}
    write_json(lake.summary(config.name, run.batch_id), summary)
    log.event(
        "validated", messages=messages, valid=summary["valid"], quarantined=quarantined,
        duplicates_dropped=summary["duplicates_dropped"], quarantine_rate=summary["quarantine_rate"],
        crash_isolated=len(isolated),
        gate="passed" if gate["passed"] else "failed", published=summary["published"],
        run_id=run.run_id, seconds=summary["timings"]["total_s"],
    )
    return summary


def _clear_runs(run: BatchRun) -> None:
    """Remove the batch's per-run folders: after a swap they hold what was replaced."""
    for zone in ("valid", "quarantine"):
        remove_dir(run.lake.runs(zone, run.config.name, run.batch_date, run.batch_id))


def _check_accounting(
    messages: int, valid: int, quarantined: int, dropped: int, dataset: str, batch_id: str
) -> None:
    """Nothing is lost: every message read is valid, quarantined or a dropped duplicate."""
    if messages != valid + quarantined + dropped:
        raise CountsDoNotAddUp(
            f"{dataset} batch {batch_id}: {messages} messages read but {valid} valid + "
            f"{quarantined} quarantined + {dropped} duplicates dropped = "
            f"{valid + quarantined + dropped} written; nothing was swapped in or published"
        )


# What `quarantine_counts` counts each row as, besides its rules: no rule id starts with "*".
ROWS = "*rows"


def quarantine_counts(quarantine: DataFrame) -> tuple[int, dict[str, int]]:
    """How many rows the quarantine holds, and how many of them each rule caught (most first,
    then by rule), in one aggregate: each row counts once as `ROWS` and once a rule it has.
    One Spark execution, not a count and a sorted aggregate (bench/README.md)."""
    row_rules = F.coalesce(F.array_distinct("reasons.rule"), F.array().cast("array<string>"))
    counted = {
        r["rule"]: r["count"]
        for r in quarantine.select(F.explode(F.concat(F.array(F.lit(ROWS)), row_rules)).alias("rule"))
        .groupBy("rule").count().collect()
    }
    rows = counted.pop(ROWS, 0)
    return rows, dict(sorted(counted.items(), key=lambda item: (-item[1], item[0])))


def _samples(quarantine: DataFrame) -> list[dict[str, Any]]:
    """The first few quarantined rows in file order, with their reasons, whatever the size of
    the quarantine."""
    return [
        {
            "source_file": r["_source_file"], "line_number": r["_line_number"],
            "raw": _escape_sample(bytes(r["_raw"])),
            "reasons": [reason.asDict() for reason in r["reasons"]],
        }
        for r in quarantine.orderBy("_source_file", "_line_number").limit(SAMPLE_COUNT).collect()
    ]


def _keep(rows: DataFrame, held: ExitStack) -> DataFrame:
    """Materialise rows once, so each later action reads them instead of what they came from.

    A local checkpoint keeps the rows as they are, serialized; measured cheaper than the
    columnar cache of `persist` on the flag pass (500k rows: 4.8-5.4 CPU s to build against
    8.8-12.8). On disk rather than in memory: building and reading it cost the same CPU
    (500k, three rounds), and in local mode, where the driver's JVM holds the blocks a memory
    level keeps, its old generation after GC at 2M fell from 937 to 54 MiB (bench/README.md).
    `_release` frees it when `held` closes.
    """
    kept = rows.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    held.callback(_release, kept)
    return kept


def _release(kept: DataFrame) -> None:
    """Free the blocks of a `_keep` now, not when the JVM's garbage collector finds them.

    PySpark has no public unpersist for a checkpointed DataFrame, so this goes through its
    plan to the RDD. Spark then logs, as expected, a WARN that the RDD "was locally
    checkpointed ... and cannot be recomputed after unpersisting": nothing reads it after this.
    """
    kept._jdf.queryExecution().logical().rdd().unpersist(False)


def _broker(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """The broker a batch was landed from (`foodtaster.sources`), or None for files."""
    source = (manifest or {}).get("source") or {}
    return source if source.get("kind") == "nats" else None


def _check_manifest(manifest: dict[str, Any] | None, lines_read: int, dataset: str, batch_id: str) -> None:
    """The landing counted every file's lines; reading fewer or more means the batch changed."""
    if manifest is None:
        return
    listed = sum(f["lines"] for f in manifest.get("files", []))
    if lines_read != listed:
        raise RuntimeError(
            f"{dataset} batch {batch_id}: the manifest lists {listed} lines but {lines_read} were read"
        )


def _ingested_at(manifest: dict[str, Any] | None, split_rows: list[Row]) -> datetime:
    """When the batch landed: the manifest's time, else the newest input file's.

    Either is the same on a rerun, so rerunning a batch rewrites identical partitions.
    """
    if manifest and manifest.get("landed_at"):
        return datetime.fromisoformat(manifest["landed_at"]).astimezone(UTC)
    # PySpark gives a timestamp as the local time of its instant: .timestamp() is that instant.
    times = [int(row["_split_modified_at"].timestamp()) for row in split_rows
             if row["_split_modified_at"] is not None]
    return datetime.fromtimestamp(max(times, default=0), UTC)


def _unread_items(
    spark: SparkSession, input_path: str, manifest: dict[str, Any] | None, config: DatasetConfig
) -> DataFrame | None:
    """The manifest's unreadable files and lines too large to read, as `unreadable_rows` takes
    them, or None. Built on the driver (they are few) from bounded prefixes: a gzip bomb or a
    300 MB line is never loaded whole."""
    if not manifest:
        return None
    folder = input_path.rstrip("/")
    fs, fs_folder = fsspec.core.url_to_fs(folder)
    rows = []
    for entry in manifest.get("unreadable", []):
        with fs.open(f"{fs_folder}/{UNREADABLE_DIR}/{entry['name']}", "rb") as handle:
            head = handle.read(config.max_message_bytes)
        rows.append((_as_spark_spells(spark, f"{folder}/{UNREADABLE_DIR}/{entry['name']}"), None,
                     bytearray(head), entry.get("rule", UNREADABLE_RULE), entry["reason"]))
    for entry in manifest.get("files", []):
        for line in entry.get("too_large", []):
            reason = (f"message is {line['bytes']} bytes, over the limit of {config.max_message_bytes}; "
                      f"too large to read: the whole line (sha256 {line['sha256']}) is in raw/")
            rows.append((_as_spark_spells(spark, f"{folder}/{entry['name']}"), line["line"],
                         bytearray(base64.b64decode(line["head"])), "line.too_large", reason))
    if not rows:
        return None
    return spark.createDataFrame(rows, "path string, line long, content binary, rule string, reason string")


def _as_spark_spells(spark: SparkSession, path: str) -> str:
    """A path spelled as `ingest.read_lines` spells `_source_file` (qualified, as on disk)."""
    jvm_path = spark._jvm.org.apache.hadoop.fs.Path(path)
    fs = jvm_path.getFileSystem(spark._jsc.hadoopConfiguration())
    return urllib.parse.unquote(fs.makeQualified(jvm_path).toUri().toString())
