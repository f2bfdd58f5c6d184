"""Retryable rules and conversation quarantine on generated days of orders and customers.

Each day: the customers batch, then the orders batch, then the retry pass. Orders whose
customer lands late wait as `retrying` and are published by a later pass; the later
messages of a conversation whose message was quarantined are held, and published in
order once the group is released. After every step, for every batch of both datasets:
messages = valid (incl. published later) + still quarantined + duplicates dropped.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import functions as F
from support.frames import table_frame

from foodtaster import contract_references
from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.engine.second_chances.retry import EXHAUSTED_RULE, run_retries
from foodtaster.engine.split import group_hold as groups
from foodtaster.registry import get_dataset
from foodtaster.state.groups import GroupLog
from foodtaster.state.lake import Lake
from foodtaster.state.retries import retry_state, retry_work
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables
from foodtaster_dev import sample

DAYS = ["2026-11-20", "2026-11-21", "2026-11-22"]
# Thresholds up: a day with a fifth of its customers late is quarantined at over hold_rate,
# and these tests follow rows, not the hold (tests/unit/test_policy_registry.py does).
ORDERS, CUSTOMERS = (dataclasses.replace(get_dataset(name), alert_rate=0.9, hold_rate=0.95)
                     for name in ("orders", "customers"))
MAX_ATTEMPTS = 4  # contracts/orders.py


def _batch(spark, lake, config, inbox, day):
    run = BatchRun(config=config, input_path=str(inbox / config.name / f"dt={day}"), lake=lake,
                   batch_id=day.replace("-", ""), batch_date=day, gate=False)
    return run_batch(spark, run).to_json()


def _retries(spark, lake, now, run_id):
    """One retry pass, after asking the lake (pyarrow, foodtaster.state.retries) whether it
    has anything to do, as the DAG's retry task does: the answer must be yes exactly when the
    pass then moves a row or releases a group, since a no means no Spark start at all."""
    policies = contract_references.retryable(contract_references.read_references(ORDERS.load_contract()))
    why = retry_work(lake, "orders", policies, ORDERS.conversation.group_by, now)
    done = run_retries(spark, ORDERS, lake, now=now, run_id=run_id)
    moved = sum(done[k] for k in ("published", "attempted", "exhausted", "held_published", "released_poison"))
    assert (why is not None) == (moved > 0), (run_id, why, done)
    return done


def _valid(spark, lake, dataset):
    return table_frame(spark, lake, dataset, VALID)


def _accounting(spark, lake, dataset, summaries):
    """messages = valid (published with the batch or later) + still quarantined + dropped, per batch."""
    later = dict(_valid(spark, lake, dataset).where(F.col("batch_id").cast("string").startswith("redrive-"))
                 .groupBy("_batch_id").count().collect())
    published_later = retry_state(lake, dataset).published
    for summary in summaries:
        batch = summary["batch_id"]
        moved = sum(1 for key in published_later if key.startswith(f"{batch}|"))
        assert later.get(batch, 0) == moved
        assert summary["messages"] == (summary["valid"] + later.get(batch, 0)
                                       + summary["quarantined"] - moved + summary["duplicates_dropped"])
    valid = _valid(spark, lake, dataset)
    assert valid.count() == valid.select("message_id").distinct().count()  # nothing published twice


@pytest.fixture(scope="module")
def days(spark, tmp_path_factory):
    """Run the three days and the passes after them; every summary and pass, in order."""
    inbox = tmp_path_factory.mktemp("inbox")
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    truth = sample.generate_second_chances(inbox, DAYS, orders_per_day=24, seed=3)
    start = datetime.now(UTC)
    runs = {"orders": [], "customers": [], "passes": []}
    for index, day in enumerate(DAYS):
        runs["customers"].append(_batch(spark, lake, CUSTOMERS, inbox, day))
        runs["orders"].append(_batch(spark, lake, ORDERS, inbox, day))
        # a day after the landing, as the daily runs go; all files landed at `start`
        now = start + timedelta(days=index, hours=13)
        runs["passes"].append(_retries(spark, lake, now, run_id=f"day{index}"))
        _accounting(spark, lake, "orders", runs["orders"])
    # a week on, every customer that lands has landed: the backoff (12 h, 24 h, 48 h) is over
    runs["passes"].append(_retries(spark, lake, start + timedelta(days=10), run_id="later"))
    _accounting(spark, lake, "orders", runs["orders"])
    return inbox, lake, truth, runs, start


def test_each_day_splits_as_the_truth_says(days):
    _, _, truth, runs, _ = days
    for day, summary in zip(DAYS, runs["orders"], strict=True):
        expected = truth.expected(day)
        assert summary["valid"] == expected.get("valid", 0), day
        assert summary["retrying"] == expected.get("retrying", 0), day
        assert summary["held_for_group"] == expected.get("held", 0), day
        assert summary["quarantined"] == sum(expected.get(k, 0) for k in ("retrying", "held", "quarantined"))
        assert summary["reasons"].get(groups.RULE, 0) == expected.get("held", 0)
    assert runs["orders"][0]["groups_open"] > 0


def test_orders_whose_customer_lands_late_are_published_by_a_later_pass(spark, days):
    _, lake, truth, runs, _ = days
    # the customer landed within the days, a day or two after the order (and the group was not poisoned)
    poisoned = {o.order_id for o in truth.orders if o.expected == "quarantined"}
    late = {o.message_id for o in truth.orders
            if o.expected in ("retrying", "held") and o.customer_day and o.order_id not in poisoned}
    valid = {r["message_id"] for r in _valid(spark, lake, "orders").select("message_id").collect()}
    assert late and late <= valid
    assert sum(p["published"] for p in runs["passes"]) > 0
    assert sum(p["held_published"] for p in runs["passes"]) > 0  # SHIPPED after a retried CREATED
    # and they went out as a redrive of their own day, with their own lineage
    redriven = _valid(spark, lake, "orders").where(F.col("batch_id").startswith("redrive-"))
    days_of = {r["message_id"]: r["_batch_id"] for r in redriven.collect()}
    for order in truth.orders:
        if order.message_id in days_of:
            assert days_of[order.message_id] == order.day.replace("-", "")


def test_counts_add_up_across_both_datasets(spark, days):
    _, lake, truth, runs, _ = days
    _accounting(spark, lake, "orders", runs["orders"])
    _accounting(spark, lake, "customers", runs["customers"])
    assert sum(s["messages"] for s in runs["customers"]) == sum(truth.customers.values())
    assert sum(s["valid"] for s in runs["customers"]) == sum(truth.customers.values())
    assert sum(s["messages"] for s in runs["orders"]) == len(truth.orders)


def test_a_second_pass_at_the_same_time_moves_nothing(spark, days):
    _, lake, _, runs, start = days
    again = _retries(spark, lake, start + timedelta(days=10), run_id="again")
    assert (again["published"], again["held_published"], again["attempted"]) == (0, 0, 0)
    _accounting(spark, lake, "orders", runs["orders"])


def test_never_landing_customers_exhaust_their_attempts(spark, days):
    _, lake, truth, runs, start = days
    never = {o.message_id for o in truth.orders if o.customer_day is None and o.expected == "retrying"}
    assert never
    exhausted = 0
    for week in range(1, 8):  # the backoff doubles: 12 h, 24 h, 48 h, 96 h
        done = _retries(spark, lake, start + timedelta(days=10 + 7 * week), run_id=f"w{week}")
        exhausted += done["exhausted"]
        assert done["published"] == 0
    assert exhausted == len(never)
    state = retry_state(lake, "orders")
    assert len(state.exhausted) == len(never)
    assert all(state.attempts[key]["attempts"] == MAX_ATTEMPTS for key in state.exhausted)
    assert EXHAUSTED_RULE == "retry.exhausted"
    _accounting(spark, lake, "orders", runs["orders"])


def test_a_poisoned_conversation_is_held_until_released_then_published_in_order(spark, days):
    _, lake, truth, runs, start = days
    poisoned = sorted({o.order_id for o in truth.orders if o.expected == "quarantined"})
    assert poisoned
    log = GroupLog(lake, "orders")
    assert set(poisoned) <= set(log.open_groups())
    # quarantined in the next day's batch too: SHIPPED held for its group
    quarantine = table_frame(spark, lake, "orders", QUARANTINE)
    held = quarantine.where(F.array_contains("reasons.rule", groups.RULE))
    assert held.where(F.col("order_id").isin(poisoned)).count() == sum(
        1 for o in truth.orders if o.order_id in poisoned and o.expected == "held")
    message = held.select(F.col("reasons")[0]["message"]).first()[0]
    assert "was quarantined" in message and "message sc-" in message
    # an operator releases one conversation: the next pass publishes its held messages, in order
    group = poisoned[0]
    assert log.release_group(group, "CREATED fixed by hand downstream", "test")
    done = _retries(spark, lake, start + timedelta(days=90), run_id="release")
    expected = [o.message_id for o in truth.orders if o.order_id == group and o.expected == "held"]
    assert done["held_published"] == len(expected)
    # written in the conversation's order (one file a date, sorted), after the poison's own day
    assert set(done["paths"].values()) == {"foodtaster.orders@batch-redrive-release-g"}
    files = DatasetTables(lake, "orders").batch(VALID, "redrive-release-g").files
    published = [r["message_id"] for path in sorted(files)
                 for r in spark.read.parquet(path).collect() if r["order_id"] == group]
    assert published == expected
    assert group not in log.open_groups()
    _accounting(spark, lake, "orders", runs["orders"])


# The dispositions log (foodtaster.state.dispositions): every status the pass sets is there
# too, and a purge releases a group.
def test_statuses_go_to_the_dispositions_log_and_a_purge_releases_a_group(spark, tmp_path):
    from foodtaster.state import dispositions as dispo

    inbox, lake = tmp_path / "inbox", Lake(str(tmp_path / "lake"))
    days = DAYS[:2]
    truth = sample.generate_second_chances(inbox, days, orders_per_day=12, late_share=0.3,
                                           poisoned_share=0.2, seed=8)
    start = datetime.now(UTC)
    summaries = []
    for index, day in enumerate(days):
        _batch(spark, lake, CUSTOMERS, inbox, day)
        summaries.append(_batch(spark, lake, ORDERS, inbox, day))
        _retries(spark, lake, start + timedelta(days=index, hours=13), run_id=f"d{index}")
    counts = dispo.Dispositions(lake, "orders").state().counts()
    assert counts.get("redriven", 0) == len(retry_state(lake, "orders").published) > 0
    assert counts.get("retrying", 0) > 0  # the job's, then the pass's attempts
    # an operator purges a poison message: its group is released, its held messages published
    poisoned = next(o for o in truth.orders if o.expected == "quarantined")
    quarantine = table_frame(spark, lake, "orders", QUARANTINE)
    row = quarantine.where(F.col("message_id") == poisoned.message_id).first()
    dispo.Dispositions(lake, "orders").record(
        "purged", [(row["_batch_id"], row["_source_file"], row["_line_number"])], by="test", why="bad order")
    done = _retries(spark, lake, start + timedelta(days=30), run_id="after-purge")
    held = [o.message_id for o in truth.orders if o.order_id == poisoned.order_id and o.expected == "held"]
    assert done["released_poison"] >= 1 and done["held_published"] >= len(held)
    assert poisoned.order_id not in GroupLog(lake, "orders").open_groups()
    _accounting(spark, lake, "orders", summaries)
