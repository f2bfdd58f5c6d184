"""The retry pass: second chances for quarantined rows, run after validate in each DAG run.

1. Retryable rows (every reason a retryable rule, foodtaster.engine.judging.reference_checks) that are
   due (`backoff_s * backoff_factor**attempts` after the last attempt, the first after the
   message landed) are checked again against today's referenced keys. Those that pass are
   published as a redrive (the valid table's batch `redrive-<id>-r`, their original date and
   lineage); the others count an attempt, and after `max_attempts` are
   `exhausted` (reason `retry.exhausted` in the pass's summary). A row with any other
   reason is never retried.
2. Groups whose poison messages were published later (by this pass or the redrive) or
   purged are released (foodtaster.state.groups), and their held messages published, in
   `order_by` order, as a redrive too.

The quarantine table is never rewritten: each row's attempts, the time of its next
attempt and what published it are in the dispositions log (foodtaster.state.dispositions),
written after the data; it is the one record a pass reads them from. A row already in
`valid` (same lineage) is never published again.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from foodtaster import contract_references, rule_ids
from foodtaster.contract.model import Contract
from foodtaster.engine.judging import reference_checks
from foodtaster.engine.split import group_hold
from foodtaster.logs import batch_logger
from foodtaster.registry import Conversation, DatasetConfig
from foodtaster.state.dispositions import record_status
from foodtaster.state.groups import GroupLog
from foodtaster.state.lake import Lake, new_run_id, write_json
from foodtaster.state.retries import retry_state
from foodtaster.state.tables import QUARANTINE, DatasetTables

EXHAUSTED_RULE = rule_ids.RETRY_EXHAUSTED


def lineage_key() -> Column:
    """`foodtaster.lineage.lineage_key` as a column."""
    return F.concat_ws("|", "_batch_id", "_source_file",
                       F.coalesce(F.col("_line_number").cast("string"), F.lit("")))


def only_retryable(policies: dict[str, contract_references.RetryPolicy]) -> Column:
    """True for a row whose every reason is a retryable rule (and that has one)."""
    rules = list(policies)
    return (F.size("reasons") > 0) & F.forall("reasons", lambda r: r["rule"].isin(*rules))


def due(rows: DataFrame, policies: dict[str, contract_references.RetryPolicy], attempts: DataFrame,
        now: datetime) -> DataFrame:
    """Add `_attempts`, `_max_attempts`, `_next_wait_s` (the wait after one more attempt) and
    keep the retryable rows (`_key` lineage) due at `now`.

    A row's policy is its first reason's rule's; `attempts` holds `_key, _attempts, _next_at`
    (epoch seconds) as the dispositions log has them. A row it does not name (its batch's run
    stopped before recording) has made no attempt: the first is due `backoff_s` after landing.
    """
    def by_rule(pick) -> Column:
        pairs = [x for rule, p in policies.items() for x in (F.lit(rule), F.lit(float(pick(p))))]
        return F.create_map(*pairs)[F.col("reasons")[0]["rule"]]

    joined = rows.join(F.broadcast(attempts), "_key", "left")
    tried = F.coalesce(F.col("_attempts"), F.lit(0))
    first = F.col("_ingested_at").cast("double") + by_rule(lambda p: p.backoff_s)
    factor = by_rule(lambda p: p.backoff_factor)
    return (
        joined.withColumn("_attempts", tried)
        .withColumn("_max_attempts", by_rule(lambda p: p.max_attempts).cast("int"))
        .withColumn("_next_wait_s", by_rule(lambda p: p.backoff_s) * F.pow(factor, tried + 1))
        .where(F.coalesce(F.col("_next_at"), first) <= F.lit(now.timestamp()))
        .drop("_next_at")
    )


def publish_later(spark: SparkSession, lake: Lake, config: DatasetConfig, rows: DataFrame,
                  redrive_id: str, run_id: str, order: list[str] | None = None) -> dict[str, str]:
    """Publish quarantined rows (their typed fields and original lineage) as a redrive does
    (`redrive.publish_redriven`: the valid table's batch `redrive_id`, their original dates,
    counted, published by the guarded move of main), in `order` within each date when given;
    returns date -> where."""
    from foodtaster.engine.judging.judging import valid_rows
    from foodtaster.engine.judging.layers import UNKNOWN, UNKNOWN_TYPE
    from foodtaster.engine.second_chances.redrive import publish_redriven

    contract = _contract(config)
    dated = rows.drop("batch_date").withColumnRenamed("_batch_date", "batch_date")
    if contract.keeps_unknown:
        # The quarantine keeps the unknown fields as valid does, a map; `valid_rows` builds that
        # map from the parser's entries. A partition written before the quarantine kept them
        # has none to give.
        entries = F.map_entries(UNKNOWN) if UNKNOWN in dated.columns else F.lit(None)
        dated = dated.withColumn(UNKNOWN, entries.cast(UNKNOWN_TYPE))
    part = valid_rows(dated, contract, "batch_date")
    if order:
        part = part.repartition(1).sortWithinPartitions("batch_date", *order)
    return publish_redriven(spark, lake, contract, config.name, part, redrive_id, run_id)


def _contract(config: DatasetConfig) -> Contract:
    return config.read_contract()


def run_retries(spark: SparkSession, config: DatasetConfig, lake: Lake, *, now: datetime | None = None,
                run_id: str | None = None) -> dict[str, Any]:
    """One retry pass over a dataset's quarantine; returns (and writes) its summary."""
    now = now or datetime.now(UTC)
    run_id = run_id or new_run_id()
    redrive_id = f"redrive-{run_id[:50]}"  # the retried rows' partition; held rows' get "-g"
    log = batch_logger(__name__, config.name, redrive_id)
    started = time.perf_counter()
    refs = contract_references.read_references(config.load_contract())
    policies = contract_references.retryable(refs)
    summary: dict[str, Any] = {
        "dataset": config.name, "run_id": run_id, "redrive_id": redrive_id, "at": now.isoformat(),
        "due": 0, "published": 0, "attempted": 0, "exhausted": 0, "released_poison": 0,
        "held_published": 0, "paths": {},
    }
    files = DatasetTables(lake, config.name).files(QUARANTINE)
    if not (policies or config.group_by) or not files:
        return summary
    state = retry_state(lake, config.name)
    quarantine = spark.read.option("mergeSchema", "true").parquet(*files).select(
        "*", lineage_key().alias("_key"), F.col("batch_date").cast("string").alias("_batch_date"))
    # published later (by a pass, a redrive), duplicate, purged or given up on: left alone
    done = spark.createDataFrame([(k,) for k in state.done()] or [("",)], "_key string")
    pending = quarantine.join(F.broadcast(done), "_key", "left_anti")
    published = reference_checks.read_published(spark, lake, config.name)
    published_keys = None if published is None else published.select(lineage_key().alias("_key"))

    if policies:
        attempts = spark.createDataFrame(
            [(k, n, datetime.fromisoformat(next_at).timestamp() if next_at else None)
             for k, (n, next_at) in state.retrying().items()] or [("", 0, None)],
            "_key string, _attempts int, _next_at double")
        keyed = [(ref, reference_checks.reference_keys(spark, lake, ref))
                 for ref in refs if ref.rule in policies]
        checked = reference_checks.mark_references(
            due(pending.where(only_retryable(policies)), policies, attempts, now)
            .withColumn("_failed", F.lit(False)), keyed,
        ).persist()
        try:
            verdicts = checked.select("_key", "_attempts", "_max_attempts", "_next_wait_s",
                                      "_failed").collect()
            summary["due"] = len(verdicts)
            passed = checked.where(~F.col("_failed"))
            if published_keys is not None:  # already published (a redrive got there first): not twice
                passed = passed.join(published_keys, "_key", "left_anti")
            out = passed.select("_key", "_batch_date").collect()
            if out:
                keys = [r["_key"] for r in out]
                paths = publish_later(spark, lake, config, passed, redrive_id + "-r", run_id)
                summary["paths"].update(paths)
                record_status(lake, config.name, "redriven", keys, by="retry", run=run_id,
                              why="its retryable rules pass now",
                              where=[paths[r["_batch_date"]] for r in out])
            summary["published"] = len(out)
        finally:
            checked.unpersist()
        failing = {r["_key"]: (r["_attempts"] + 1, r["_max_attempts"], r["_next_wait_s"])
                   for r in verdicts if r["_failed"]}
        spent = [k for k, (n, most, _) in failing.items() if n >= most]
        waiting = [k for k in failing if k not in set(spent)]
        record_status(lake, config.name, "retrying", waiting, by="retry", run=run_id, why="still failing",
                      attempts=[failing[k][0] for k in waiting],
                      next_at=[(now + timedelta(seconds=failing[k][2])).isoformat() for k in waiting])
        record_status(lake, config.name, "exhausted", spent, by="retry", run=run_id,
                      why=f"{EXHAUSTED_RULE}: failed every attempt", attempts=[failing[k][0] for k in spent])
        summary["attempted"], summary["exhausted"] = len(failing), len(spent)

    conversation = config.conversation
    if conversation is not None:
        summary.update(_release_groups(spark, lake, config, conversation, pending, published_keys,
                                       redrive_id, run_id, summary["paths"]))
    summary["seconds"] = round(time.perf_counter() - started, 3)
    write_json(lake.report(config.name, redrive_id) + "/retry_summary.json", summary)
    log.event("retried", **{k: v for k, v in summary.items() if k not in ("paths", "dataset")})
    return summary


def _release_groups(spark: SparkSession, lake: Lake, config: DatasetConfig, conversation: Conversation,
                    pending: DataFrame, published_keys: DataFrame | None, redrive_id: str, run_id: str,
                    paths: dict[str, str]) -> dict[str, int]:
    """Release groups whose poison was published later (by this pass too) or purged; publish
    their held rows in order."""
    log = GroupLog(lake, config.name)
    resolved = retry_state(lake, config.name).resolved  # read again: this pass published some
    released = log.release(resolved, "poison message published later or purged", f"retry {run_id}")
    still_open = list(log.open_groups())
    held = pending.where(F.array_contains(F.col("reasons.rule"), group_hold.RULE))
    # A group that is not open holds nothing: its held rows go out (also after a crash
    # between the release and this publication).
    opened = spark.createDataFrame([(g,) for g in still_open] or [("",)], "_g string")
    free = held.join(F.broadcast(opened), group_hold.group_column(conversation.group_by) == F.col("_g"),
                     "left_anti")
    if published_keys is not None:
        free = free.join(published_keys, "_key", "left_anti")
    keys = [r["_key"] for r in free.select("_key").collect()]
    if keys:
        written = publish_later(spark, lake, config, free, redrive_id + "-g", run_id,
                                order=[*conversation.group_by, conversation.order_by])
        paths.update(written)
        record_status(lake, config.name, "redriven", keys, by="group release", run=run_id,
                      why="its group was released", where=",".join(written.values()))
    return {"released_poison": len(released), "held_published": len(keys), "groups_open": len(still_open)}
