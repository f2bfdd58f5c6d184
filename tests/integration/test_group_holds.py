"""Conversation quarantine on Spark: the hold on five rows, a group on a field the contract lacks."""

from __future__ import annotations

from datetime import datetime

import pytest
from support.lake import poison

from foodtaster.engine.split.group_hold import (
    GROUP_HASH,
    HELD,
    group_check,
    group_hash,
    mark_held,
    open_frame,
    poisoned_groups,
)
from foodtaster.registry import RegistryError, load_registry
from foodtaster.state.lake import Lake

ROWS = "message_id string, order_id string, created_at timestamp, _failed boolean"


def _rows(spark, rows):
    return spark.createDataFrame(
        [(m, o, datetime.fromisoformat(t) if t else None, f) for m, o, t, f in rows], ROWS)


def test_later_messages_of_a_poisoned_group_are_held(spark):
    rows = _rows(spark, [
        ("a1", "o-1", "2026-11-20 09:00:00", False),  # before the poison: kept
        ("a2", "o-1", "2026-11-20 10:00:00", True),  # the poison
        ("a3", "o-1", "2026-11-20 11:00:00", False),  # after it: held
        ("a4", "o-1", None, False),  # no order: held
        ("b1", "o-2", "2026-11-20 11:00:00", False),  # another group: kept
        ("c1", None, "2026-11-20 11:00:00", True),  # no group: holds nothing
    ])
    marked = mark_held(rows, None, ("order_id",), "created_at", "b1")
    got = {r["message_id"]: (r["_failed"], r[HELD]) for r in marked.collect()}
    assert {m for m, (_, why) in got.items() if why} == {"a3", "a4"}
    assert got["a2"] == (True, None) and got["a1"] == (False, None) and got["b1"] == (False, None)
    assert got["a3"][0] and "message a2 of batch b1 was quarantined" in got["a3"][1]
    reason = marked.where("message_id = 'a3'").select(group_check(("order_id",)).reason).first()[0][0]
    assert (reason["layer"], reason["rule"], reason["column"], reason["value"]) == (
        "group", "group.poisoned", "order_id", "o-1")


def test_a_held_message_that_passed_every_field_rule_gives_its_hold_as_its_only_reason(spark):
    """The flag pass keeps no statuses for a row that passed it (`job.VERDICT` is null): a row
    held after the pass gets its group's reason, and no field reason made up from them."""
    from support.frames import lines_frame

    from contracts.orders import Orders
    from foodtaster.contract import read_contract
    from foodtaster.engine.judging.judging import decide_outcomes, flag_lines, with_reasons

    contract = read_contract(Orders)
    line = ('{"message_id": "%s", "order_id": "%s", "customer_id": "c", "amount": %s, "currency": "USD", '
            '"status": "CREATED", "created_at": "2026-11-20T%s:00:00Z", "items": 1}')
    lines = [line % ("m1", "o-1", -1, "10"), line % ("m2", "o-1", 5, "11"), line % ("m3", "o-2", 5, "11")]
    flagged = flag_lines(lines_frame(spark, [x.encode() for x in lines]), contract, 1 << 20)
    marked = mark_held(flagged, None, ("order_id",), "created_at", "b1")
    rows = with_reasons(decide_outcomes(marked, contract), contract, 1 << 20, [group_check(("order_id",))])
    got = {r.message_id: (r._outcome, [(x.layer, x.rule) for x in r.reasons]) for r in rows.collect()}
    assert got == {
        "m1": ("quarantined", [("contract", "amount.greater_than_or_equal_to(0)")]),
        "m2": ("quarantined", [("group", "group.poisoned")]),
        "m3": ("valid", []),
    }


def test_the_groups_watched_are_the_failed_rows_and_the_open_ones_each_once(spark):
    """Counted as the job counts them (`batch_counts`), then joined with the open groups."""
    from pyspark.sql import functions as F

    from foodtaster.engine.batch.batch_counts import batch_counts, failed_group_hashes

    rows = _rows(spark, [
        ("a1", "o-1", None, True), ("a2", "o-1", None, True),  # one group failed twice
        ("b1", "o-2", None, False),  # passed: not watched
        ("c1", "o-3", None, True),
        ("d1", None, None, True),  # failed with no group: watches nothing
    ]).select("*", F.lit("f").alias("_source_file"), F.when(F.col("message_id") < "b", 0).otherwise(1)
              .cast("long").alias("_split_start"), F.lit(0).cast("long").alias("_row_id"),
              F.col("created_at").alias("_modified_at"))
    failed = failed_group_hashes(batch_counts(rows, None, group_hash(("order_id",))))
    opened = open_frame(spark, [poison("x", "o-9", "2026-11-19T12:00:00.000000Z", batch="b0"),
                                poison("y", "o-3", "2026-11-19T12:00:00.000000Z", batch="b0")])
    watched = poisoned_groups(failed, opened)
    expected = rows.sparkSession.createDataFrame([("o-1",), ("o-3",), ("o-9",)], "order_id string")
    assert sorted(r[GROUP_HASH] for r in watched.collect()) == sorted(
        r[0] for r in expected.select(group_hash(("order_id",))).collect())


def test_groups_held_by_an_earlier_batch_hold_this_one(spark):
    opened = open_frame(spark, [poison("x", "o-1", "2026-11-19T12:00:00.000000Z", batch="b0")])
    rows = _rows(spark, [
        ("d1", "o-1", "2026-11-20 08:00:00", False),
        ("d2", "o-1", "2026-11-19 11:00:00", False),  # earlier than the poison: kept
        ("d3", "o-3", "2026-11-20 08:00:00", False),
    ])
    marked = mark_held(rows, opened, ("order_id",), "created_at", "b1")
    held = {r["message_id"]: r[HELD] for r in marked.collect() if r[HELD]}
    assert list(held) == ["d1"] and "message m-x of batch b0" in held["d1"]


def test_the_earliest_poison_holds_whether_it_is_this_batchs_or_an_open_groups(spark):
    opened = open_frame(spark, [poison("x", "o-1", "2026-11-20T08:00:00.000000Z", batch="b0"),
                                poison("y", "o-2", "2026-11-20T12:00:00.000000Z", batch="b0"),
                                poison("z", "o-3", None, batch="b0")])
    rows = _rows(spark, [
        ("a1", "o-1", "2026-11-20 09:00:00", False),  # after the open poison: held by it
        ("a2", "o-1", "2026-11-20 10:00:00", True),  # this batch's, later: not the earliest
        ("b1", "o-2", "2026-11-20 09:00:00", False),  # before this batch's poison: kept
        ("b2", "o-2", "2026-11-20 10:00:00", True),
        ("b3", "o-2", "2026-11-20 11:00:00", False),  # held by b2, before the open poison
        ("c1", "o-3", "2026-11-19 09:00:00", False),  # the open poison's order is unknown: held
    ])
    marked = mark_held(rows, opened, ("order_id",), "created_at", "b1")
    held = {r["message_id"]: r[HELD] for r in marked.collect() if r[HELD]}
    assert sorted(held) == ["a1", "b3", "c1"]
    assert "message m-x of batch b0" in held["a1"] and "message b2 of batch b1" in held["b3"]
    assert "message m-z of batch b0" in held["c1"]
    assert marked.columns == [*rows.columns, HELD]


def test_a_conversation_on_a_field_the_contract_lacks_is_refused_by_name(spark, tmp_path):
    import dataclasses

    from foodtaster.engine.second_chances.second_chances import prepare
    from foodtaster.logs import batch_logger

    config = dataclasses.replace(load_registry()["orders"], group_by="basket_id")
    with pytest.raises(RegistryError, match=r"\['basket_id'\] are not fields of contracts.orders:Orders"):
        prepare(spark, Lake(str(tmp_path)), config, batch_logger(__name__, "orders", "b1"))


def test_a_conversation_of_two_fields_is_held_and_released_through_a_batch(spark, tmp_path, monkeypatch,
                                                                           capsys):
    """Orders as conversations of a customer's order (`group_by: [customer_id, order_id]`): the
    poison holds its own pair's later message only, not another customer's order of the same id;
    `groups ls` names the pair by its JSON array, `groups release` takes it, and the retry pass
    publishes the held message. messages = valid + redriven + quarantined, before and after."""
    from support.frames import batch_frame

    from foodtaster.engine.batch.job import BatchRun
    from foodtaster.engine.run import run_batch
    from foodtaster.engine.second_chances.retry import run_retries
    from foodtaster.ops.cli import main
    from foodtaster.registry import PROJECT_ROOT
    from foodtaster.state.accounts import check_accounts
    from foodtaster.state.groups import GroupLog, held_counts
    from foodtaster.state.retries import retry_work
    from foodtaster.state.tables import QUARANTINE, VALID

    registry = tmp_path / "pipeline.yaml"
    registry.write_text(
        "datasets:\n  orders:\n    contract: contracts.orders:Orders\n"
        f"    expectation_suite: {PROJECT_ROOT}/expectations/orders.json\n"
        "    group_by: [customer_id, order_id]\n    order_by: created_at\n"
        "    alert_rate: 0.9\n    hold_rate: 0.95\n")
    monkeypatch.setenv("FOODTASTER_REGISTRY", str(registry))
    config = load_registry(registry)["orders"]
    line = ('{"message_id": "%s", "order_id": "%s", "customer_id": "%s", "amount": %s, "currency": "USD", '
            '"status": "CREATED", "created_at": "2026-11-20T%s:00:00Z", "items": 1}')
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "orders.jsonl").write_text("\n".join([
        line % ("m1", "o-1", "c-1", 5, "09"),  # before the poison: valid
        line % ("m2", "o-1", "c-1", -1, "10"),  # the poison of (c-1, o-1)
        line % ("m3", "o-1", "c-1", 5, "11"),  # after it: held
        line % ("m4", "o-1", "c-2", 5, "11"),  # another customer's o-1: its own conversation
        line % ("m5", "o-2", "c-1", 5, "11"),  # another order of c-1: its own conversation
    ]) + "\n")
    lake = Lake(str(tmp_path / "lake"))
    run = BatchRun(config=config, input_path=str(inbox), lake=lake, batch_id="b1", batch_date="2026-11-20",
                   gate=False)
    summary = run_batch(spark, run).to_json()
    assert (summary["messages"], summary["valid"], summary["quarantined"]) == (5, 3, 2)
    (held,) = batch_frame(spark, lake, "orders", QUARANTINE, "b1").where("message_id = 'm3'").collect()
    (reason,) = held.reasons
    assert (reason.rule, reason.column, reason.value) == (
        "group.poisoned", "(customer_id,order_id)", '["c-1","o-1"]')
    assert 'is held: its message m2 of batch b1' in reason.message
    group = '["c-1","o-1"]'
    assert list(GroupLog(lake, "orders").open_groups()) == [group]
    assert held_counts(lake, "orders", ("customer_id", "order_id")) == {group: 1}

    common = ["--dataset", "orders", "--lake", lake.root]
    assert main(["groups", "ls", *common]) == 0
    shown = capsys.readouterr().out
    assert "(customer_id,order_id)" in shown and group in shown and "m2" in shown
    assert retry_work(lake, "orders", {}, ("customer_id", "order_id"), datetime.now()) is None
    assert main(["groups", "release", *common, "--group", group, "--why", "m2 is a refund"]) == 0
    assert "released (customer_id,order_id)" in capsys.readouterr().out
    assert "no longer open" in retry_work(lake, "orders", {}, ("customer_id", "order_id"), datetime.now())

    done = run_retries(spark, config, lake, run_id="t1")
    assert (done["held_published"], done["groups_open"]) == (1, 0)
    released = batch_frame(spark, lake, "orders", VALID, "redrive-t1-g").collect()
    assert [r.message_id for r in released] == ["m3"]
    accounts = check_accounts(lake, "orders")
    assert (accounts["b1"]["valid"], accounts["b1"]["redriven"], accounts["b1"]["quarantined"]) == (3, 1, 1)
