"""On a batch landed and written by the job: listed messages, then a downstream recall, then a rerun.
After each, the poison list, the summary, the ledger and the quarantine Parquet agree on counts,
and messages = valid + quarantined + duplicates dropped, counted by Spark from the partitions."""

from __future__ import annotations

import urllib.parse
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from support.frames import batch_frame, table_frame

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state import ledger
from foodtaster.state.browse import message_bytes
from foodtaster.state.lake import Lake, read_json
from foodtaster.state.poison import PoisonList, fingerprint
from foodtaster.state.recall import RULE as RECALLED
from foodtaster.state.recall import report_downstream
from foodtaster.state.tables import QUARANTINE, VALID
from foodtaster_dev.sample import generate_batch

DATE = "2026-11-20"
LISTED = "registry.listed"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    generate_batch(Path(lake.inbox("orders", DATE)), messages=300, seed=5, poison_rate=0.1, files=2,
                   gzip_files=1, kinds=["redelivery", "truncated_json", "unknown_enum"])
    landed = land_batch(lake, "orders", DATE)
    return BatchRun(config=get_dataset("orders"), input_path=landed.raw_path, lake=lake,
                    batch_id=landed.batch_id, batch_date=DATE, gate=False)


def _record(run: BatchRun, summary: dict) -> None:
    """The ledger's record of the run, with the counts the pipeline's ledger task takes from the summary."""
    ledger.record_batch(run.lake, "orders", {
        "batch_id": run.batch_id, "batch_date": run.batch_date, "verdict": "published", "severity": "ok",
        "why": [], "timings": {}, **{key: summary[key] for key in (
            "messages", "valid", "quarantined", "duplicates_dropped", "listed", "quarantine_rate")},
    })


def _agree(spark, run: BatchRun) -> dict:
    """Check that every count of the batch agrees; returns the quarantine's rule counts."""
    lake, batch = run.lake, run.batch_id
    valid = batch_frame(spark, lake, "orders", VALID, batch)
    quarantine = batch_frame(spark, lake, "orders", QUARANTINE, batch)
    rules = Counter(r.rule for r in quarantine.select(F.explode("reasons.rule").alias("rule")).collect())
    listed_ids = {r.value for r in quarantine.select(F.explode("reasons").alias("r")).select("r.*")
                  .where(F.col("rule") == LISTED).collect()}
    summary = read_json(lake.summary("orders", batch))
    record = ledger.batch_entry(lake, "orders", batch)
    for counts in (summary, record):
        assert counts["valid"] == valid.count() and counts["quarantined"] == quarantine.count()
        assert counts["messages"] == counts["valid"] + counts["quarantined"] + counts["duplicates_dropped"]
        assert counts["listed"] == rules[LISTED]
        assert counts.get("recalled", 0) == rules[RECALLED]
    in_force = {e.id for e in PoisonList(lake, "orders").entries()}
    assert listed_ids <= in_force  # every listed row names an entry in force
    return {"rules": rules, "listed_ids": listed_ids}


def test_the_list_the_ledger_and_the_quarantine_agree_through_a_recall_and_a_rerun(spark, run):
    first = run_batch(spark, run).to_json()
    lake = run.lake
    poison = PoisonList(lake, "orders")
    quarantined = batch_frame(spark, lake, "orders", QUARANTINE, run.batch_id).orderBy(
        "_source_file", "_line_number").first()
    by_bytes = poison.add("fingerprint", fingerprint(bytes(quarantined._raw)), "crashes billing", "operator")
    valid_rows = batch_frame(spark, lake, "orders", VALID, run.batch_id).orderBy(
        "_source_file", "_line_number").limit(2).collect()
    by_key = poison.add("key", valid_rows[0].message_id, "a known test order", "operator")

    listed_run = run_batch(spark, run).to_json()
    _record(run, listed_run)
    agreed = _agree(spark, run)
    assert listed_run["listed"] == 2 and agreed["listed_ids"] == {by_bytes.id, by_key.id}
    assert listed_run["valid"] == first["valid"] - 1

    # A consumer crashed on a published row: listed and recalled in one call.
    target = valid_rows[1]
    name = urllib.parse.unquote(target._source_file.rsplit("/", 1)[-1])
    entry = report_downstream(lake, "orders", batch_id=run.batch_id, source_file=name,
                              line_number=target._line_number, why="billing: KeyError 'total'",
                              reporter="billing", recall=True)
    agreed = _agree(spark, run)
    assert agreed["rules"][RECALLED] == 1 and agreed["rules"][LISTED] == 2
    record = ledger.batch_entry(lake, "orders", run.batch_id)
    assert (record["valid"], record["quarantined"], record["recalled"]) == (
        listed_run["valid"] - 1, listed_run["quarantined"] + 1, 1)
    assert record["recalls"][0]["entry"] == entry.id and entry.source == "downstream"
    # Out of valid (read across the dataset, as a consumer does), into the quarantine with its bytes.
    everything = table_frame(spark, lake, "orders", VALID)
    assert everything.where(F.col("message_id") == target.message_id).count() == 0
    back = batch_frame(spark, lake, "orders", QUARANTINE, run.batch_id).where(
        (F.col("_source_file") == target._source_file) & (F.col("_line_number") == target._line_number)
    ).collect()
    assert len(back) == 1 and [(r.layer, r.rule, r.message, r.value) for r in back[0].reasons] == [
        ("registry", RECALLED, "billing: KeyError 'total'", entry.id)]
    assert bytes(back[0]._raw) == message_bytes(lake, "orders", run.batch_id, name, target._line_number)[0]
    assert fingerprint(bytes(back[0]._raw)) == entry.value
    assert (back[0].message_id, back[0].amount, back[0]._ingested_at) == (
        target.message_id, target.amount, target._ingested_at)  # published fields and lineage kept

    # A rerun judges the batch again: the recalled message is now one more listed message.
    rerun = run_batch(spark, run).to_json()
    _record(run, rerun)
    agreed = _agree(spark, run)
    assert rerun["listed"] == 3 and agreed["rules"][RECALLED] == 0
    assert agreed["listed_ids"] == {by_bytes.id, by_key.id, entry.id}
    assert rerun["valid"] == record["valid"] and rerun["quarantined"] == record["quarantined"]
