"""A run asked something it cannot use is refused at its land task, at once, with a short
reason: nothing a person writes into a run's conf is dropped (foodtaster_airflow.run_conf)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from foodtaster.errors import UsageError, refusal
from foodtaster.registry import get_dataset
from foodtaster_airflow import ledger_step, run_conf


@pytest.mark.parametrize(("conf", "reprocess", "backfill", "why"), [
    ({"batch_date": "2026-11-21"}, True, False,
     "foodtaster_orders_reprocess judges a landed batch again, named by batch_id alone"),
    ({}, True, False, "needs batch_id"),
    ({"batch_id": "../x"}, True, False, 'batch_id "../x" is not a batch id'),
    ({"batch_id": "20261121", "inbox": "x"}, True, False, 'does not use "inbox": it takes batch_id'),
    ({"batch_id": "20261121"}, False, False, "lands inbox dates; reprocess a landed batch"),
    ({"batch_date": "2026-11-21"}, False, True, "a backfill lands each date of its range"),
    ({"batch_date": "2026-13-45"}, False, False, "is not a calendar day"),
    ({"batch_date": "yesterday"}, False, False, "is not a date: give YYYY-MM-DD"),
    ({"bach_date": "2026-11-21"}, False, False, 'does not use "bach_date": it takes batch_date'),
])
def test_a_conf_the_run_cannot_use_is_refused_with_the_reason(conf, reprocess, backfill, why):
    dag_id = "foodtaster_orders_reprocess" if reprocess else "foodtaster_orders"
    with pytest.raises(UsageError, match=why) as raised:
        run_conf.check("orders", dag_id, conf, reprocess=reprocess, backfill=backfill)
    assert refusal(raised.value)  # failed at once, never retried


def test_what_a_run_can_use_passes():
    run_conf.check("orders", "foodtaster_orders", {}, reprocess=False)
    run_conf.check("orders", "foodtaster_orders", {"batch_date": "2026-11-21T00:00:00+00:00"},
                   reprocess=False)
    run_conf.check("orders", "foodtaster_orders_reprocess", {"batch_id": "20261121"}, reprocess=True)


def test_a_huge_value_is_quoted_back_short():
    with pytest.raises(UsageError) as raised:
        run_conf.check("orders", "foodtaster_orders", {"batch_date": "x" * 20_000}, reprocess=False)
    message = str(raised.value)
    assert len(message) < 200 and "(20000 characters)" in message and "'" not in message


def test_a_backfill_run_is_told_from_its_run_type():
    assert run_conf.is_backfill({"dag_run": SimpleNamespace(run_type="backfill", conf={})})
    assert not run_conf.is_backfill({"dag_run": SimpleNamespace(run_type="manual", conf={})})
    assert run_conf.conf_of({"dag_run": SimpleNamespace(conf={"a": 1}), "params": {"b": 2}}) == {"a": 1}
    assert run_conf.conf_of({"params": {"b": 2, "c": None}}) == {"b": 2}


def test_the_land_task_refuses_a_backfill_given_an_inbox_date(tmp_path, monkeypatch):
    """The Backfill tab's runs carry the backfill's conf: an inbox date there would land one
    day for every date of the range. The land task refuses it, noted and alerted."""
    from airflow.sdk.exceptions import AirflowFailException

    from foodtaster_airflow.factory import build_dag

    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path / "lake"))
    notes = []
    monkeypatch.setattr(ledger_step, "note_run", lambda *args: notes.append(args[-1]))
    dag = build_dag(get_dataset("orders"))
    assert dag.params == {} or not dict(dag.params)  # the Backfill tab shows nothing it drops
    run = SimpleNamespace(run_type="backfill", conf={"batch_date": "2026-11-02"})
    context = {"params": {"batch_date": "2026-11-02"}, "run_id": "backfill__2026-11-05", "dag_run": run,
               "logical_date": datetime(2026, 11, 5, tzinfo=UTC)}
    with pytest.raises(AirflowFailException, match="^REFUSED: batch_date .* in a backfill"):
        dag.task_dict["land"].python_callable(**context)
    assert notes == [notes[0]] and notes[0].startswith(  # filed under its run: no batch landed
        "REFUSED: run backfill__2026-11-05, nothing landed, inbox date 2026-11-05")
