"""Redrive: judge quarantined rows again, against today's contract and poison list, and
publish those that now pass, under their original date and lineage.

After a fix (the producer corrected, the contract relaxed, a poison entry removed), an
operator picks quarantined rows of one dataset by date range and optionally by rule,
batch or message id (the value of the contract's unique key: orders' `message_id`,
order_events' `id`). Each row's `_raw` bytes go through the same pure judging functions
as a batch (`judging.flag_lines`, `judging.decide_outcomes`), so a redriven
row is judged exactly as a new one would be today. Then:

- rows that pass, and whose unique key is in the valid table nowhere (on main, or on a held
  batch's audit branch), are published to it as the batch `redrive-<id>` (their original
  `batch_date` and lineage): written, committed on its audit branch, counted, and published by
  the guarded move of main, as a batch is (`foodtaster.state.publish`);
- rows that pass but whose message is already published are duplicates: never a second copy;
- rows that still fail keep their status and get today's reasons in their history.

What became of each row is recorded in the dispositions log (foodtaster.state.dispositions)
after the data is written; rows already `redriven`, `duplicate` or `purged` are never
picked again, so a second redrive moves nothing. A dry run judges and counts by rule,
and writes nothing.

Public API (the retry pass of `foodtaster.engine` builds on it):

    candidates = select_quarantined(spark, lake, dataset, Selection(...))  # DataFrame
    judged = rejudge(candidates, contract, poison, max_message_bytes)      # + _outcome, reasons
    judged = mark_published(judged, published_keys(spark, lake, dataset, key, exclude=...), key)
    written = publish_redriven(spark, lake, contract, dataset, rows, partition_id, run_id)  # {date: where}
    run_redrive(spark, RedriveRun(...)) -> report dict (the CLI, the Spark job, the DAG)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from foodtaster import contract_references, rule_ids
from foodtaster.contract.model import Contract, Key
from foodtaster.engine.judging import listed, reference_checks
from foodtaster.engine.judging.guard import DEFAULT_BUDGET, Budget
from foodtaster.engine.judging.judging import (
    DUPLICATE,
    QUARANTINED,
    VALID,
    decide_outcomes,
    flag_lines,
    unique_key,
    valid_rows,
    with_reasons,
)
from foodtaster.engine.judging.layers import key_column
from foodtaster.lineage import LINEAGE_KEY
from foodtaster.logs import batch_logger
from foodtaster.registry import DatasetConfig
from foodtaster.state import dispositions as dispo
from foodtaster.state.browse import batches
from foodtaster.state.lake import Lake, check_batch_id, check_date, new_run_id, write_json
from foodtaster.state.lease import batch_lease
from foodtaster.state.poison import PoisonList
from foodtaster.state.publish import publish_staged, stage_valid
from foodtaster.state.tables import QUARANTINE as QUARANTINE_TABLE
from foodtaster.state.tables import VALID as VALID_TABLE
from foodtaster.state.tables import BatchFiles, DatasetTables

PUBLISHED = "published"  # a row's redrive outcome: passed and published now
# Quarantine rows whose `_raw` is not the whole message (a file that could not be read, a
# line too long to read): only their first bytes are kept, so they cannot be judged again.
UNJUDGEABLE_RULES = (rule_ids.FILE_UNREADABLE, rule_ids.FILE_TOO_LARGE, rule_ids.LINE_TOO_LARGE)
PREFIX = "redrive-"


@dataclass(frozen=True)
class Selection:
    """Which quarantined rows a redrive judges again: a date range, optionally narrowed."""

    date_from: str
    date_to: str
    rule: str | None = None
    batch_id: str | None = None
    message_id: str | None = None

    def __post_init__(self) -> None:
        check_date(self.date_from)
        check_date(self.date_to)
        if self.date_from > self.date_to:
            raise ValueError(f"--from {self.date_from} is after --to {self.date_to}")
        if self.batch_id:
            check_batch_id(self.batch_id)


@dataclass(frozen=True)
class RedriveRun:
    config: DatasetConfig
    lake: Lake
    selection: Selection
    dry_run: bool = False
    redrive_id: str = field(default_factory=new_run_id)
    by: str = "operator"
    why: str = ""

    @property
    def partition_id(self) -> str:
        """The batch id of the valid partitions this redrive writes: `redrive-<id>`."""
        return check_batch_id(PREFIX + self.redrive_id)


def quarantine_partitions(lake: Lake, dataset: str, selection: Selection) -> list[BatchFiles]:
    """The quarantine table's batches `selection` names (date range, batch)."""
    return [p for p in batches(lake, QUARANTINE_TABLE, dataset)
            if selection.date_from <= p.batch_date <= selection.date_to
            and (selection.batch_id is None or p.batch_id == selection.batch_id)]


def select_quarantined(spark: SparkSession, lake: Lake, dataset: str, selection: Selection,
                       state: dispo.DispositionState | None = None,
                       parts: list[BatchFiles] | None = None, key: Key | None = None,
                       ) -> DataFrame | None:
    """The quarantined rows `selection` names that are still in quarantine (not redriven,
    duplicate or purged), with `batch_date` and `_old_rules` (their rules when quarantined).
    None when no quarantined batch is in the range. `key` is the contract's unique key,
    the column `selection.message_id` is a value of."""
    parts = quarantine_partitions(lake, dataset, selection) if parts is None else parts
    if not parts:
        return None
    # mergeSchema: a batch of unreadable files alone has no contract columns
    rows = (spark.read.option("mergeSchema", "true").parquet(*[f for p in parts for f in p.files])
            .withColumn("batch_date", F.date_format(F.col("batch_date"), "yyyy-MM-dd")))
    judgeable = ~F.exists("reasons", lambda r: r["rule"].isin(*UNJUDGEABLE_RULES)) & F.col(
        "_line_number").isNotNull()
    rows = rows.where(judgeable)
    if rule := selection.rule:
        rows = rows.where(F.exists("reasons", lambda r: r["rule"] == rule))
    if selection.message_id:
        if key is None or any(p.keys[0] not in rows.columns for p in key.paths):
            raise ValueError(f"{dataset}: --message-id needs the contract's unique key"
                             + (f" ({key}) in the quarantine" if key else ", and the contract has none"))
        rows = rows.where(key_column(key) == selection.message_id)
    rows = rows.select("_raw", *LINEAGE_KEY, "_ingested_at", "batch_date",
                       F.array_distinct(F.col("reasons.rule")).alias("_old_rules"))
    state = state if state is not None else dispo.Dispositions(lake, dataset).state()
    settled = [(r.batch_id, r.source_file, r.line_number) for r, status in state
               if status.status in dispo.SETTLED]
    if settled:
        done = spark.createDataFrame(settled, "_batch_id string, _source_file string, _line_number long")
        rows = rows.join(F.broadcast(done), list(LINEAGE_KEY), "left_anti")
    return rows


def as_lines(rows: DataFrame) -> DataFrame:
    """Quarantined rows shaped as `ingest.read_lines` shapes a landed line, lineage kept.

    `_row_id` orders copies of one key (the first is kept): a hash of the lineage,
    the same on every run, so a rerun judges the same way."""
    return rows.select(
        F.col("_raw").cast("string").alias("_text"), "_raw", *LINEAGE_KEY, "_ingested_at", "batch_date",
        "_old_rules", F.lit(0).cast("long").alias("_split_start"),
        F.xxhash64(*LINEAGE_KEY).alias("_row_id"),
    )


def rejudge(rows: DataFrame, contract: Contract, poison: DataFrame | None,
            max_message_bytes: int,
            keyed: Sequence[tuple[contract_references.Reference, DataFrame | None]] = (),
            budget: Budget = DEFAULT_BUDGET) -> DataFrame:
    """Rows of `select_quarantined` -> judged today: `_outcome` (valid, quarantined,
    duplicate within the rows judged) and `reasons` (today's; empty for a valid row).
    `keyed`: the contract's references with today's published keys (as the job joins them),
    so a row whose customer is still missing is not published by a redrive either. `budget`:
    what a Python check may spend on a message, as in the job (the dataset's settings)."""
    flagged = reference_checks.mark_references(
        flag_lines(as_lines(rows), contract, max_message_bytes, poison, budget), list(keyed))
    extra = reference_checks.reference_checks([ref for ref, _ in keyed])
    return with_reasons(decide_outcomes(flagged, contract), contract, max_message_bytes, extra)


def published_keys(spark: SparkSession, lake: Lake, dataset: str, key: Key,
                   exclude: str | None = None) -> DataFrame | None:
    """Every `key` value in the valid table, published on main or waiting on a batch's audit
    branch (a held batch may be released later), but batch `exclude`'s (this redrive's own, on
    a rerun)."""
    tables = DatasetTables(lake, dataset)
    files = [f for b in [*tables.batches(VALID_TABLE), *tables.staged_batches()] if b.batch_id != exclude
             for f in b.files]
    if not files:
        return None
    return spark.read.parquet(*files).select(key_column(key).alias("_published_key")).distinct()


def mark_published(judged: DataFrame, published: DataFrame | None, key: Key | None) -> DataFrame:
    """A valid row whose key is already published becomes a duplicate: nothing is published twice."""
    if published is None or key is None:
        return judged
    marked = judged.join(published, key_column(key) == F.col("_published_key"), "left")
    outcome = F.when((F.col("_outcome") == VALID) & F.col("_published_key").isNotNull(), DUPLICATE) \
        .otherwise(F.col("_outcome"))
    return marked.withColumn("_outcome", outcome).drop("_published_key")


def publish_redriven(spark: SparkSession, lake: Lake, contract: Contract, dataset: str, rows: DataFrame,
                     partition_id: str, run_id: str) -> dict[str, str]:
    """Publish valid rows (`judging.valid_rows` plus their original `batch_date`) to the valid
    table as the batch `partition_id`: written in the run's folder, a date at a time (a file holds
    one date, the table's partition), committed on the batch's audit branch, counted against what
    was written, and published by the guarded move of main. A rerun with the same id replaces its
    own rows. Returns {date: where the rows are (`<table>@<tag>`)}."""
    from foodtaster.engine.split.table_writes import arrow_schema, required_fields, write_files
    from foodtaster.state.tables import BATCH_DATE, BATCH_ID

    dated = (rows.withColumn(BATCH_DATE, F.col(BATCH_DATE).cast("date"))
             .withColumn(BATCH_ID, F.lit(partition_id)))
    expected = {str(r["batch_date"]): r["count"] for r in dated.groupBy("batch_date").count().collect()}
    if not expected:
        return {}
    tables = DatasetTables(lake, dataset)
    table = tables.ensure(VALID_TABLE, arrow_schema(dated), required_fields(contract))
    files: list[str] = []
    for day, count in sorted(expected.items()):
        folder = tables.run_folder(VALID_TABLE, table, day, partition_id, run_id)
        written = write_files(dated.where(F.col("batch_date") == F.lit(day).cast("date")), folder)
        got = spark.read.parquet(*written).count() if written else 0
        if got != count:
            raise RuntimeError(f"{dataset} {partition_id}: {count} rows of {day} to publish, {got} written; "
                               "nothing was published")
        files += written
    staged = stage_valid(tables, partition_id, files, run_id, operation="redrive")
    if staged.rows != sum(expected.values()):
        raise RuntimeError(f"{dataset} {partition_id}: {sum(expected.values())} rows to publish, its "
                           f"snapshot holds {staged.rows}; nothing was published")
    published = publish_staged(tables, partition_id, run_id)
    where = f"{tables.identifier(VALID_TABLE)}@{published.tag}"
    return {day: where for day in expected}


def run_redrive(spark: SparkSession, run: RedriveRun) -> dict[str, Any]:
    """Select, judge, publish (unless a dry run), record; returns the report (also written
    to `reports/<dataset>/redrive-<id>/redrive.json` and, applied, the ledger)."""
    config, lake, dataset = run.config, run.lake, run.config.name
    log = batch_logger(__name__, dataset, run.partition_id)
    started = time.perf_counter()
    # One redrive of a dataset at a time; and, to publish, the lease of every batch it reads:
    # a run of one of them at the same moment would judge its rows again and publish them twice.
    with batch_lease(lake, dataset, "redrive", run.redrive_id), ExitStack() as batches:
        # the selection as the log's key=value fields, only those it has: no dict, no None
        chosen = {key: value for key, value in asdict(run.selection).items() if value is not None}
        log.event("redrive_started", **chosen, dry_run=run.dry_run)
        parts = quarantine_partitions(lake, dataset, run.selection)
        if not run.dry_run:
            for batch_id in sorted({p.batch_id for p in parts}):
                batches.enter_context(batch_lease(lake, dataset, batch_id, run.redrive_id))
        contract = config.read_contract()
        entries = PoisonList(lake, dataset).entries()
        poison = listed.poison_frame(spark, entries) if entries else None
        disposition_log = dispo.Dispositions(lake, dataset)
        key = unique_key(contract)
        candidates = select_quarantined(spark, lake, dataset, run.selection, disposition_log.state(), parts,
                                        key=key)
        report = _report(run)
        if candidates is None:
            return _finish(run, report, started)
        keyed = [(ref, reference_checks.reference_keys(spark, lake, ref))
                 for ref in contract_references.read_references(config.load_contract())]
        judged = rejudge(candidates, contract, poison, config.max_message_bytes, keyed, Budget.of(config))
        if key:
            judged = mark_published(judged, published_keys(spark, lake, dataset, key, run.partition_id), key)
        judged = judged.persist()
        try:
            outcome = F.when(F.col("_outcome") == VALID, PUBLISHED).otherwise(F.col("_outcome"))
            judged = judged.withColumn("_redrive", outcome)
            report["by_rule"] = _by_rule(judged)
            report["by_batch"] = _by_batch(judged)
            report["counts"] = _totals(report["by_batch"])
            if run.dry_run:
                return _finish(run, report, started)
            passing = judged.where(F.col("_redrive") == PUBLISHED)
            written = publish_redriven(spark, lake, contract, dataset,
                                       valid_rows(passing, contract, "batch_date"), run.partition_id,
                                       run.redrive_id) if report["counts"][PUBLISHED] else {}
            report["published"] = written
            _record(disposition_log, judged, run, written)
        finally:
            judged.unpersist()
    return _finish(run, report, started)


def _report(run: RedriveRun) -> dict[str, Any]:
    return {
        "dataset": run.config.name, "redrive_id": run.redrive_id, "batch_id": run.partition_id,
        "selection": asdict(run.selection), "dry_run": run.dry_run, "by": run.by, "why": run.why,
        "contract": run.config.contract, "by_rule": {}, "by_batch": {},
        "counts": {PUBLISHED: 0, DUPLICATE: 0, QUARANTINED: 0}, "published": {},
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _by_rule(judged: DataFrame) -> dict[str, dict[str, int]]:
    """{rule the row was quarantined for: {published|duplicate|quarantined: rows}}."""
    found: dict[str, dict[str, int]] = {}
    grouped = judged.select(F.explode("_old_rules").alias("rule"), "_redrive").groupBy("rule", "_redrive")
    for row in grouped.count().collect():
        outcomes = found.setdefault(row["rule"], {PUBLISHED: 0, DUPLICATE: 0, QUARANTINED: 0})
        outcomes[row["_redrive"]] = row["count"]
    return dict(sorted(found.items()))


def _by_batch(judged: DataFrame) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for row in judged.groupBy("_batch_id", "batch_date", "_redrive").count().collect():
        entry = found.setdefault(row["_batch_id"], {"batch_date": row["batch_date"], PUBLISHED: 0,
                                                     DUPLICATE: 0, QUARANTINED: 0})
        entry[row["_redrive"]] = row["count"]
    return dict(sorted(found.items()))


def _totals(by_batch: dict[str, dict[str, Any]]) -> dict[str, int]:
    return {name: sum(b[name] for b in by_batch.values()) for name in (PUBLISHED, DUPLICATE, QUARANTINED)}


def _record(log: dispo.Dispositions, judged: DataFrame, run: RedriveRun, written: dict[str, str]) -> None:
    """One event an outcome, after the data is safely written: state is written last, so a
    crash before it leaves no event naming rows that were not written (`docs/lake.md`)."""
    rows = judged.select(*LINEAGE_KEY, "batch_date", "_redrive",
                         F.col("reasons.rule").alias("_rules")).collect()
    common = {"by": run.by, "run": run.partition_id, "why": run.why or "redrive"}
    published = [r for r in rows if r["_redrive"] == PUBLISHED]
    log.record(dispo.REDRIVEN, dispo.rows_of(published), where=[written[r["batch_date"]] for r in published],
               **common)
    log.record(dispo.DUPLICATE, dispo.rows_of([r for r in rows if r["_redrive"] == DUPLICATE]), **common)
    failing = [r for r in rows if r["_redrive"] == QUARANTINED]
    log.record(dispo.FAILED_AGAIN, dispo.rows_of(failing), reasons=[list(r["_rules"] or []) for r in failing],
               **common)


def _finish(run: RedriveRun, report: dict[str, Any], started: float) -> dict[str, Any]:
    from foodtaster.state.ledger import record_redrive

    report["seconds"] = round(time.perf_counter() - started, 3)
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_json(run.lake.report(run.config.name, run.partition_id) + "/redrive.json", report)
    if not run.dry_run:
        record_redrive(run.lake, run.config.name, report)
    batch_logger(__name__, run.config.name, run.partition_id).event(
        "redrive_finished", dry_run=run.dry_run, **report["counts"], seconds=report["seconds"])
    return report
