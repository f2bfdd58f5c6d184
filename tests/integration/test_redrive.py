"""Redrive on generated batches: after a contract fix, quarantined rows that now pass are
published under their original date and lineage, once; the accounts add up after each step."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from pyspark.sql import functions as F
from support.frames import batch_frame, table_frame
from support.lake import row_count

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.engine.second_chances.redrive import RedriveRun, Selection, run_redrive
from foodtaster.registry import get_dataset
from foodtaster.state.accounts import check_accounts
from foodtaster.state.dispositions import DUPLICATE, FAILED_AGAIN, REDRIVEN, Dispositions
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import redrive_entries
from foodtaster.state.tables import QUARANTINE, VALID, audit_branch
from foodtaster_dev.sample import generate_batch

DAY1, DAY2 = "2026-11-20", "2026-11-21"
FIXED = "support.contracts:OrdersAnyCurrency"


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """Two batches: b1, and b2 a redelivery of b1's files (the same bad messages again)."""
    inbox = tmp_path_factory.mktemp("inbox")
    generate_batch(inbox, messages=120, seed=5, poison_rate=0.25, files=1, gzip_files=0,
                   kinds=["unknown_enum", "truncated_json", "out_of_range"], batch_date=DAY1)
    again = tmp_path_factory.mktemp("inbox2")
    for path in inbox.iterdir():
        shutil.copy(path, again / path.name)
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    config = get_dataset("orders")
    for folder, batch_id, day in ((inbox, "b1", DAY1), (again, "b2", DAY2)):
        summary = run_batch(spark, BatchRun(config=config, input_path=str(folder), lake=lake,
                                            batch_id=batch_id, batch_date=day, gate=False)).to_json()
        accounted = summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
        assert summary["messages"] == accounted
    check_accounts(lake, "orders")
    return lake


def _redrive(spark, lake, day_to, **kwargs):
    config = dataclasses.replace(get_dataset("orders"), contract=FIXED)
    return run_redrive(spark, RedriveRun(config=config, lake=lake, selection=Selection(DAY1, day_to),
                                         by="test", why="currency fix", **kwargs))


def test_a_dry_run_counts_by_rule_and_moves_nothing(spark, lake):
    report = _redrive(spark, lake, DAY1, dry_run=True, redrive_id="dry")
    assert report["counts"]["published"] > 0
    assert report["by_rule"]["currency.isin"]["published"] == report["counts"]["published"]
    assert report["by_rule"]["json.invalid"]["published"] == 0
    assert row_count(lake, "orders", VALID, "redrive-dry") == 0
    assert Dispositions(lake, "orders").state().counts() == {}
    assert redrive_entries(lake, "orders") == []


def test_a_redrive_waits_for_a_live_run_of_a_batch_it_would_publish_from(spark, lake):
    from foodtaster.state.lease import LeaseHeld, batch_lease

    with batch_lease(lake, "orders", "b1", "a-live-run"), pytest.raises(LeaseHeld, match="a-live-run"):
        _redrive(spark, lake, DAY1, redrive_id="blocked")
    assert row_count(lake, "orders", VALID, "redrive-blocked") == 0
    assert Dispositions(lake, "orders").state().counts() == {}
    assert redrive_entries(lake, "orders") == []
    check_accounts(lake, "orders")


def test_redrive_publishes_once_under_the_original_date_and_lineage(spark, lake):
    first = _redrive(spark, lake, DAY1, redrive_id="r1")
    moved = first["counts"]["published"]
    assert moved > 0 and first["counts"]["quarantined"] > 0
    assert first["published"] == {DAY1: "foodtaster.orders@batch-redrive-r1"}
    published = batch_frame(spark, lake, "orders", VALID, "redrive-r1")
    assert published.count() == moved
    assert {r._batch_id for r in published.select("_batch_id").distinct().collect()} == {"b1"}
    assert published.where(F.col("currency").isin("usd", "XYZ")).count() == moved
    accounts = check_accounts(lake, "orders")
    assert accounts["b1"]["redriven"] == moved
    state = Dispositions(lake, "orders").state()
    assert state.counts("b1") == {REDRIVEN: moved}

    # Judged again, still failing: the status stays, the history gets today's reasons.
    failing = batch_frame(spark, lake, "orders", QUARANTINE, "b1").where(
        F.exists("reasons", lambda r: r["rule"] == "json.invalid")).first()
    history = Dispositions(lake, "orders").history("b1", failing._source_file, failing._line_number)
    assert [(h.what, h.run) for h in history] == [(FAILED_AGAIN, "redrive-r1")]
    assert "json.invalid" in history[0].reasons

    second = _redrive(spark, lake, DAY1, redrive_id="r2")
    assert second["counts"]["published"] == 0 and second["published"] == {}
    assert row_count(lake, "orders", VALID, "redrive-r2") == 0
    check_accounts(lake, "orders")
    assert [e["redrive_id"] for e in redrive_entries(lake, "orders")] == ["r1", "r2"]


def test_a_message_already_published_is_a_duplicate_not_a_second_copy(spark, lake):
    report = _redrive(spark, lake, DAY2, redrive_id="r3")
    assert report["counts"]["published"] == 0
    assert report["by_batch"]["b2"]["duplicate"] > 0
    accounts = check_accounts(lake, "orders")
    assert accounts["b2"]["duplicates_dropped"] >= report["by_batch"]["b2"]["duplicate"]
    duplicates = report["by_batch"]["b2"]["duplicate"]
    assert Dispositions(lake, "orders").state().counts("b2") == {DUPLICATE: duplicates}
    # b1 was held (over hold_rate): its valid rows wait on its audit branch, and count as published
    valid = batch_frame(spark, lake, "orders", VALID, "b1", ref=audit_branch("b1")).unionByName(
        batch_frame(spark, lake, "orders", VALID, "redrive-r1"))
    assert valid.count() == valid.select("message_id").distinct().count()


def test_a_batch_with_redriven_rows_is_not_rerun(spark, lake):
    """Judged again, its redriven rows would be published a second time in its own partition."""
    from foodtaster.engine.run import BatchWasRedriven

    raw = lake.raw("orders", DAY1, "b1")
    with pytest.raises(BatchWasRedriven, match=(
            f"would publish them twice.*trigger the DAG foodtaster_orders_redrive with date_from {DAY1} .*"
            f"`foodtaster redrive --dataset orders --from {DAY1} --to {DAY1} --batch b1 --dry-run`")):
        run_batch(spark, BatchRun(config=get_dataset("orders"), input_path=raw, lake=lake, batch_id="b1",
                                  batch_date=DAY1, gate=False))
    check_accounts(lake, "orders")


def test_a_redrive_beside_a_scheduled_run_of_the_dataset_leaves_every_count_right(spark, lake, tmp_path):
    """A new batch lands and is judged while a redrive of a range that includes its date runs:
    whether the redrive saw the new quarantine or not, the accounts add up, and a second
    redrive finishes the job with nothing published twice."""
    from concurrent.futures import ThreadPoolExecutor

    day3 = "2026-11-22"
    generate_batch(tmp_path, messages=120, seed=9, poison_rate=0.25, files=1, gzip_files=0,
                   kinds=["unknown_enum", "truncated_json"], batch_date=day3)
    scheduled = BatchRun(config=get_dataset("orders"), input_path=str(tmp_path), lake=lake, batch_id="b3",
                         batch_date=day3, gate=False)
    with ThreadPoolExecutor(2) as pool:
        batch = pool.submit(run_batch, spark, scheduled)
        redrive = pool.submit(_redrive, spark, lake, day3, redrive_id="r4")
        summary, _ = batch.result().to_json(), redrive.result()
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    check_accounts(lake, "orders")
    _redrive(spark, lake, day3, redrive_id="r5")
    accounts = check_accounts(lake, "orders")
    assert accounts["b3"]["redriven"] > 0
    published = table_frame(spark, lake, "orders", VALID).where(F.col("batch_id").startswith("redrive-"))
    assert published.count() == published.select("message_id").distinct().count()
