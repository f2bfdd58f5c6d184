"""Taste one batch: the job that reads it, judges every message, writes the partitions,
counts, gates and decides; it never publishes. An orchestrator: the judging itself is
`foodtaster.engine.judging.judging` (pure DataFrame -> DataFrame), the verdict `foodtaster.policy`.
The run around it (the batch's lease, a hand run's landing, crash isolation, publishing) is
`foodtaster.engine.run`.

One batch, in order (`judge_batch`):

1. read      the raw batch and its manifest (`inputs`)
2. judge     the one pass over every message, kept (`judging.flag_lines`)
3. count     what the whole batch says: file splits, repeated keys, failed groups (`batch_counts`)
4. settle    the suspects alone: copies of a key, holds for a conversation (`suspects`, `judging`)
5. write     valid and quarantine files in this run's folders of the two tables (`table_writes`)
6. account   counted from what was written, the valid files committed to the batch's audit
             branch and counted again by its snapshot; nothing is lost (`accounting`)
7. gate      the Great Expectations suite on the valid rows the branch holds (`gate`)
8. decide    the verdict, once (`policy.decide`), into the summary (`foodtaster.summary`)
9. commit    the quarantine to its table's main; the valid rows wait on their branch (the
             publish task, or a hand run, publishes them: `foodtaster.state.publish`)
10. record   the batch's state events after its data (conversations, retries, drift), then the summary

Drift (`foodtaster.engine.judging.drift`) rides step 2: the pass keeps each message's unknown paths,
producer and optional fields' presence, counted in one aggregate over the kept pass.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property

from pyiceberg.table import Table
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from foodtaster import drift
from foodtaster.contract.model import Contract
from foodtaster.engine.batch import accounting, batch_counts, crash, ingest, inputs
from foodtaster.engine.judging import listed
from foodtaster.engine.judging.drift import DriftSpec, batch_drift, counted, drift_spec
from foodtaster.engine.judging.duplicates import key_hash
from foodtaster.engine.judging.guard import Budget
from foodtaster.engine.judging.judging import (
    DUPLICATE,
    QUARANTINED,
    VALID,
    decide_outcomes,
    flag_lines,
    quarantine_rows,
    unique_key,
    unreadable_rows,
    valid_rows,
    with_outcome,
)
from foodtaster.engine.judging.masking import mask_reasons
from foodtaster.engine.judging.suspects import (
    Watch,
    bytes_of_failed_only,
    cleared,
    suspects,
    with_bytes_read_again,
)
from foodtaster.engine.second_chances import second_chances
from foodtaster.engine.spark import keep
from foodtaster.engine.split.table_writes import (
    arrow_schema,
    read_files,
    required_fields,
    with_batch,
    write_files,
)
from foodtaster.logs import BatchLogger, batch_logger
from foodtaster.policy import Facts, decide
from foodtaster.privacy import Masker
from foodtaster.registry import DatasetConfig
from foodtaster.rule_ids import CRASH_ISOLATED, LISTED
from foodtaster.state.drift import DriftLog
from foodtaster.state.lake import Lake, fault_point, new_run_id, write_json
from foodtaster.state.poison import PoisonList
from foodtaster.state.publish import Committed, commit_quarantine, stage_valid
from foodtaster.state.tables import QUARANTINE as QUARANTINE_TABLE
from foodtaster.state.tables import VALID as VALID_TABLE
from foodtaster.state.tables import DatasetTables, audit_branch
from foodtaster.summary import BatchSummary, BatchTables, GateResult


@dataclass(frozen=True)
class BatchRun:
    """One batch to taste. The job stages its valid rows; a hand run (`foodtaster.engine.run`)
    publishes them when the verdict allows, unless `publish=False` leaves them to the
    pipeline's publish task. `run_id` names this run's own output paths and its hold on the
    batch's lease.
    """

    config: DatasetConfig
    input_path: str
    lake: Lake
    batch_id: str
    batch_date: str
    publish: bool = True
    gate: bool = True
    run_id: str = field(default_factory=new_run_id)
    drift: bool = True  # count and record the batch's drift (off: the bench's baseline)


@dataclass
class _Batch:
    """What one run of the batch reads once at start, and what its steps hand on."""

    run: BatchRun
    contract: Contract
    extras: second_chances.Extras  # referenced keys, open groups
    manifest: inputs.Manifest | None
    log: BatchLogger
    poison: DataFrame | None  # the poison list, small, so broadcast
    started: float
    drift: DriftSpec | None = None  # what the pass reads for drift; None: drift not recorded
    tables: DatasetTables = field(init=False)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tables = DatasetTables(self.run.lake, self.run.config.name, self.run.config.table_names)

    @cached_property
    def masker(self) -> Masker:
        """What a person may read of a quarantined row (`foodtaster.privacy`), keyed with the
        lake's key: made at its first use, after the batch was checked against its manifest, so a
        batch refused before writing leaves no key behind either."""
        return Masker.for_readers(self.run.config, self.run.lake.root, self.contract)

    def lap(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[name] = now - since
        return now


@dataclass(frozen=True)
class _Written:
    """What the batch wrote under its run's paths, counted from what was written."""

    valid: DataFrame  # the written valid rows, read back: the gate judges these
    valid_count: int
    quarantined: int
    reasons: dict[str, int]
    samples: list[dict]
    chances: dict
    messages: int
    duplicates_dropped: int
    ingested_at: datetime
    staged: Committed  # the valid files on the batch's audit branch: what the gate judges
    quarantine_files: tuple[str, ...]  # committed to the quarantine table after the gate


def judge_batch(spark: SparkSession, run: BatchRun, isolated: list[crash.Isolated]) -> BatchSummary:
    """Read, judge, write the tables' files, commit them (valid rows on the batch's audit
    branch, the quarantine on main) and write the summary; returns the summary. The run's caller
    holds the batch's lease and has landed its input; `isolated` are the messages crash isolation
    found so far (`foodtaster.engine.run`).

    Rows are written in the run's own folders, counted from what was written, and committed only
    when every message is accounted for. The summary is the last thing written.
    """
    config, started = run.config, time.perf_counter()
    entries = PoisonList(run.lake, config.name).entries()
    log = batch_logger(__name__, config.name, run.batch_id)
    contract = config.read_contract()
    batch = _Batch(
        run=run, contract=contract,
        extras=second_chances.prepare(spark, run.lake, config, log),
        manifest=inputs.read_manifest(run.input_path), log=log,
        poison=listed.poison_frame(spark, entries) if entries else None, started=started,
    )
    if run.drift:
        batch.drift = drift_spec(batch.contract, config.producer_path)
    log.event("started", input=run.input_path, contract=config.contract, run_id=run.run_id)
    # What is kept in Spark's memory for this batch is freed on the way out, even when a step fails.
    with ExitStack() as held:
        lines = inputs.read_batch(spark, run.input_path, batch.manifest, config)
        kept, messages_kept = _judge_every_message(batch, lines, held)
        found = _count_drift(batch, kept)
        written = _split_write_and_account(spark, batch, lines, kept, messages_kept, held)
    gate = _gate(batch, written.valid)
    report = None if found is None else drift.report(
        found, DriftLog(run.lake, config.name).batches(), config.drift_window)
    summary = _summarize(batch, written, gate, isolated, report)
    return _commit_and_record(batch, summary, written, found)


def _count_drift(batch: _Batch, kept: DataFrame) -> drift.BatchDrift | None:
    """The batch's drift, from the kept pass: one small aggregate, no message read again."""
    if batch.drift is None:
        return None
    mark = time.perf_counter()
    run = batch.run
    found = batch_drift(counted(kept, batch.drift), batch.drift, run.batch_id, run.batch_date)
    batch.lap("drift_s", mark)
    return found


def _judge_every_message(batch: _Batch, lines: DataFrame, held: ExitStack) -> tuple[DataFrame, int]:
    """Step 2: the one pass over every message, kept; all that follows reads this copy, not the
    input, but for the bytes of the few suspects that passed it (`with_bytes_read_again`).
    Returns it and how many messages it holds."""
    config = batch.run.config
    the_pass = batch.extras.mark(flag_lines(lines, batch.contract, config.max_message_bytes, batch.poison,
                                            Budget.of(config), batch.drift))
    if batch.run.gate:
        # Great Expectations is imported while Spark runs the pass, after its plan is built:
        # started with the batch, the import's Python held the GIL against the Py4J calls
        # that build the plan (docs/decisions/008-the-gate-on-the-written-rows.md).
        from foodtaster.engine.gate.gate import import_ahead

        import_ahead()
    # How many messages the pass holds, counted while it is kept: the batch's counts shuffle
    # into a task a `KEYS_PER_TASK` of them. Observed last: Spark generates no code for an
    # observation, so one between two projections split the pass's generated code in two
    # (docs/decisions/003-the-pass-kept-on-disk.md).
    observed = Observation()
    kept = keep(bytes_of_failed_only(the_pass).observe(observed, F.count(F.lit(1)).alias("rows")), held)
    fault_point("flagged")
    return kept, observed.get["rows"]


def _split_write_and_account(spark: SparkSession, batch: _Batch, lines: DataFrame, kept: DataFrame,
                             messages_kept: int, held: ExitStack) -> _Written:
    """Steps 3 to 6: count the batch, settle the suspects, write both partitions under the
    run's paths and count them from what was written."""
    run, config, contract, extras = batch.run, batch.run.config, batch.contract, batch.extras
    manifest = batch.manifest
    broker = inputs.broker(manifest)
    key = unique_key(contract)
    group_hash = extras.group_hash()
    mark = batch.started
    # The file splits, and what other rows can change as sets of hashes (the key hashes that
    # repeat, the failed rows' groups), in one scan of the kept pass (`batch_counts`). The lines
    # read and the files' newest time come from the splits, and the writes number the lines from
    # them by row id (`ingest.with_line_numbers`). The counts are kept, not cached: two sets drawn
    # from them are joined back onto the kept pass, and Spark renames the second copy of a
    # relation in one plan, which a cache then misses
    # (docs/decisions/007-the-batch-counted-in-one-aggregate.md).
    with batch_counts.shuffled_into(spark, batch_counts.partitions(messages_kept)):
        counts = keep(batch_counts.batch_counts(kept, key, group_hash), held)
        split_rows = batch_counts.split_offsets(counts).collect()
    ingested_at = inputs.ingested_at(manifest, split_rows)
    lines_read = sum(row["_split_lines"] for row in split_rows)
    too_large = inputs.too_large_lines(manifest)
    inputs.check_lines_read(manifest, lines_read + too_large, config.name, run.batch_id)  # before any write
    mark = batch.lap("read_validate_s", mark)

    # The rows the repeated keys and the failed groups watch, and the failed rows, are the
    # suspects (a few percent), kept and judged alone; every other row is valid as it stands,
    # and is written without a join but its line numbers.
    watches: list[Watch] = []
    if key is not None:
        watches.append((key_hash(key), batch_counts.repeated_key_hashes(counts)))
    if group_hash is not None:
        watches.append(extras.group_watch(group_hash, batch_counts.failed_group_hashes(counts), run.batch_id))
    # The suspects are kept once without their bytes, then judged with the bytes read again in
    # the same Spark job that keeps the judgement, which counts the duplicates it drops.
    bare = keep(suspects(kept, watches), held)
    flagged = extras.hold(with_bytes_read_again(bare, lines), run.batch_id)
    skipped = None if broker else inputs.skipped_lines(spark, manifest)

    def numbered(rows: DataFrame) -> DataFrame:  # a broker message's number is its sequence
        rows = rows.drop("_split_start") if broker else ingest.with_line_numbers(rows, split_rows, skipped)
        return rows.select("*", F.lit(run.batch_id).alias("_batch_id"),
                           F.lit(ingested_at).cast(TimestampType()).alias("_ingested_at"))

    # Counted where they are dropped: every byte-identical copy but the first of a key.
    dropped = Observation()
    judged = keep(numbered(decide_outcomes(flagged, contract, every_copy_here=True)).observe(
        dropped, F.count_if(F.col("_outcome") == DUPLICATE).alias(DUPLICATE)), held)
    duplicates_dropped = dropped.get[DUPLICATE]
    mark = batch.lap("duplicates_s", mark)

    quarantine = quarantine_rows(with_outcome(judged, QUARANTINED), contract, config.max_message_bytes,
                                 extras.checks())
    unread = inputs.unread_items(spark, run.input_path, manifest, config)
    if unread is not None:
        quarantine = quarantine.unionByName(unreadable_rows(unread, run.batch_id, ingested_at),
                                            allowMissingColumns=True)
    valid = with_batch(valid_rows(numbered(cleared(kept, watches)), contract).unionByName(
        valid_rows(with_outcome(judged, VALID), contract)), run.batch_date, run.batch_id)
    quarantine = with_batch(mask_reasons(quarantine, batch.masker), run.batch_date, run.batch_id)
    # every reader of a reason reads it masked
    valid_table, quarantine_table = _tables_for(batch, valid, quarantine)  # refused before any write
    tables = batch.tables
    run_valid = tables.run_folder(VALID_TABLE, valid_table, run.batch_date, run.batch_id, run.run_id)
    run_quarantine = tables.run_folder(QUARANTINE_TABLE, quarantine_table, run.batch_date, run.batch_id,
                                       run.run_id)
    valid_files = write_files(valid, run_valid)
    quarantine_files = write_files(quarantine, run_quarantine)
    mark = batch.lap("write_s", mark)
    fault_point("written")

    # Counted from what was written: the valid count is in the Parquet footers, the quarantine
    # is small. A row lost on the way (a folder removed under the job) fails the batch here.
    written_valid = spark.read.parquet(run_valid)
    written_quarantine = spark.read.parquet(run_quarantine)
    valid_count = written_valid.count()
    quarantined, reason_counts = accounting.quarantine_counts(written_quarantine)
    messages = lines_read + too_large + inputs.unreadable_files(manifest)
    accounting.check_accounting(messages, valid_count, quarantined, duplicates_dropped, config.name,
                                run.batch_id)
    # The audit: the valid files on the batch's branch, counted again by the snapshot's summary;
    # the gate then judges what the branch holds (step 7).
    staged = stage_valid(tables, run.batch_id, valid_files, run.run_id)
    accounting.check_accounting(messages, staged.rows, quarantined, duplicates_dropped, config.name,
                                run.batch_id)
    fault_point("staged")
    written = _Written(
        valid=read_files(spark, list(staged.files), like=written_valid) or written_valid,
        valid_count=valid_count, quarantined=quarantined, reasons=reason_counts,
        samples=accounting.samples(written_quarantine, batch.masker),
        chances=extras.count(written_quarantine, run.batch_id, reason_counts),
        messages=messages, duplicates_dropped=duplicates_dropped, ingested_at=ingested_at,
        staged=staged, quarantine_files=tuple(quarantine_files),
    )
    batch.lap("metrics_s", mark)
    return written


def _tables_for(batch: _Batch, valid: DataFrame, quarantine: DataFrame) -> tuple[Table, Table]:
    """The dataset's two tables, made on first use or their schemas evolved to hold these rows;
    a contract change no reader could follow is refused here, before any file is written."""
    required = required_fields(batch.contract)
    return (batch.tables.ensure(VALID_TABLE, arrow_schema(valid), required),
            batch.tables.ensure(QUARANTINE_TABLE, arrow_schema(quarantine), []))


def _gate(batch: _Batch, valid: DataFrame) -> GateResult:
    """Step 7: the batch gate on the written valid rows, once what the batch kept is freed
    (docs/decisions/008-the-gate-on-the-written-rows.md)."""
    run, config = batch.run, batch.run.config
    mark = time.perf_counter()
    if not run.gate:
        gate = GateResult.skipped_gate()
    else:
        from foodtaster.engine.gate.gate import run_gate

        report = run.lake.report(config.name, run.batch_id)
        gate = GateResult(**run_gate(valid, config.suite_path(), config.name, run.batch_id, run.batch_date,
                                     data_docs_uri=report + "/data_docs", masker=batch.masker,
                                     added=batch.contract.expectations))
    batch.lap("gate_s", mark)
    return gate


def _summarize(batch: _Batch, written: _Written, gate: GateResult,
               isolated: list[crash.Isolated], report: drift.DriftReport | None) -> BatchSummary:
    """Step 8: the summary, with the verdict decided once from its counts, its gate and the new
    unknown paths that crossed the dataset's `drift_page_share`."""
    run, config, lake = batch.run, batch.run.config, batch.run.lake
    messages, quarantined = written.messages, written.quarantined
    # Known before this run: listed by anyone, or isolated by an earlier run's crash.
    already_listed = written.reasons.get(LISTED, 0) + written.reasons.get(CRASH_ISOLATED, 0) - len(isolated)
    chances = written.chances
    rate = round(quarantined / messages, 6) if messages else 0.0
    facts = Facts(
        messages=messages, quarantine_rate=rate, quarantined=quarantined, listed=already_listed,
        retrying=int(chances.get("retrying") or 0), held_for_group=int(chances.get("held_for_group") or 0),
        gate_passed=gate.passed, gate_failed=tuple(gate.failed_expectations),
        accounted=written.valid_count + quarantined + written.duplicates_dropped,
        drift_pages=tuple(drift.page_why(p, config.drift_page_share)
                          for p in drift.crossing(report, config.drift_page_share))
        if report is not None and config.drift_page_share is not None else (),
    )
    return BatchSummary(
        dataset=config.name, batch_id=run.batch_id, batch_date=run.batch_date, run_id=run.run_id,
        contract=config.contract, input=run.input_path,
        not_judged=list(batch.contract.schema.ignored) or None if batch.contract.judged_by_schema else None,
        messages=messages, valid=written.valid_count, quarantined=quarantined,
        duplicates_dropped=written.duplicates_dropped, listed=already_listed,
        crash_isolated=[item.as_dict() for item in isolated], quarantine_rate=rate,
        reasons=written.reasons, samples=written.samples, gate=gate, **chances,
        paths={"report": lake.report(config.name, run.batch_id), "data_docs": gate.data_docs},
        tables=BatchTables(names=config.table_names, branch=audit_branch(run.batch_id),
                           staged_snapshot=written.staged.snapshot_id),
        ingested_at=written.ingested_at.isoformat(),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        verdict=decide(facts, config), drift=None if report is None else report.to_json(),
    )


def _commit_and_record(batch: _Batch, summary: BatchSummary, written: _Written,
                       found: drift.BatchDrift | None) -> BatchSummary:
    """Steps 9 and 10: commit the quarantine (one snapshot of its table replacing the batch's
    rows; the valid rows stay on their audit branch until published), record the state events,
    write the summary. A held batch leaves an earlier publication of it on main: holding never
    deletes data."""
    run, config, lake = batch.run, batch.run.config, batch.run.lake
    committed = commit_quarantine(batch.tables, run.batch_id, written.quarantine_files, run.run_id)
    accounting.check_accounting(summary.messages, written.staged.rows, committed.rows,
                                summary.duplicates_dropped, config.name, run.batch_id)
    fault_point("quarantine_committed")
    groups_open = batch.extras.record(lake, run.batch_id)  # after the data, as all state
    if found is not None:  # one event a run; the fold keeps the batch's latest (reruns count once)
        DriftLog(lake, config.name).record(found)
    batch.timings["total_s"] = time.perf_counter() - batch.started
    assert summary.tables is not None
    summary = summary.with_changes(
        groups_open=groups_open, timings={k: round(v, 3) for k, v in batch.timings.items()},
        tables=replace(summary.tables, quarantine_snapshot=committed.snapshot_id),
    )
    write_json(lake.summary(config.name, run.batch_id), summary.to_json())
    batch.log.event(
        "validated", messages=summary.messages, valid=summary.valid, quarantined=summary.quarantined,
        duplicates_dropped=summary.duplicates_dropped, quarantine_rate=summary.quarantine_rate,
        crash_isolated=len(summary.crash_isolated), gate="passed" if summary.gate.passed else "failed",
        verdict=summary.verdict.severity, run_id=run.run_id, seconds=summary.timings["total_s"],
    )
    return summary
