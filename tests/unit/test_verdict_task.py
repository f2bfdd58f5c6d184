"""The pipeline's last task, `verdict`: a held batch fails its run (red in the runs list, the
grid and the DAG list), an empty landing skips it, and a release, shown on the held run,
turns it green when the task runs again (docs/decisions/017-a-held-batch-fails-its-run.md)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from support.airflow_api import FakeAirflowApi
from support.lake import commit_rows
from support.task_documents import landed, ledger_entry, summary

from foodtaster.state import ledger
from foodtaster.state.lake import Lake, write_json
from foodtaster.state.release import release_batch
from foodtaster.state.tables import VALID
from foodtaster_airflow import ledger_step, steps
from foodtaster_airflow.rest import AirflowApi

DAG, RUN = "foodtaster_orders", "scheduled__2026-11-20T00:00:00+00:00"
HELD = {"quarantine_rate": 0.3, "quarantined": 30, "valid": 69}


@pytest.fixture
def lake(tmp_path, monkeypatch) -> Lake:
    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path))
    return Lake(str(tmp_path))


def recorded(lake: Lake, outcome: str) -> dict:
    """The ledger task's result for a run of `outcome`, its record written as the task does."""
    write_json(lake.summary("orders", "20261120"), summary(**(HELD if outcome == "held" else {})))
    decision = None if outcome == "empty" else steps.read_verdict("orders", landed(lake))
    published = {"valid": 90} if outcome == "published" else None
    entry = ledger_entry(lake, decision, published, "foodtaster_orders", RUN)
    ledger.record_batch(lake, "orders", entry)
    return {"entry": entry}


def staged_rows(lake: Lake) -> None:
    commit_rows(lake, "orders", VALID, "2026-11-20", "20261120", pa.table({"message_id": ["m1"]}),
                publish=False, run_id="run")


def test_a_published_batch_ends_the_run_green_and_an_empty_landing_skips(lake):
    assert ledger_step.verdict("orders", recorded(lake, "published"), DAG, RUN) == {"verdict": "published"}
    with pytest.raises(AirflowSkipException, match="empty: batch 20261120"):
        ledger_step.verdict("orders", recorded(lake, "empty"), DAG, RUN)


def test_a_held_batch_fails_the_run_with_why_and_what_to_do(lake, caplog):
    with pytest.raises(AirflowFailException) as failed:
        ledger_step.verdict("orders", recorded(lake, "held"), DAG, RUN)
    assert str(failed.value).startswith(
        "HELD, not published: batch 20261120, inbox date 2026-11-20: quarantine rate 30.00% >= hold_rate")
    assert "held because: quarantine rate 30.00%" in caplog.text
    assert "foodtaster release --dataset orders --batch 20261120" in caplog.text
    assert "foodtaster_orders_redrive's Release held batch" in caplog.text


def test_once_released_the_held_runs_verdict_ends_green_with_who_and_why(lake, caplog):
    held = recorded(lake, "held")
    staged_rows(lake)  # the rows on the batch's audit branch a release publishes
    release_batch(lake, "orders", "20261120", "the bad rows are a test feed", "alice")
    assert ledger_step.verdict("orders", held, DAG, RUN)["verdict"] == "released"
    assert "RELEASED by alice at " in caplog.text and "the bad rows are a test feed" in caplog.text
    assert "event=run_note_skipped" in caplog.text and "note: RELEASED by alice" in caplog.text
    # a later run of the batch has its own verdict: this run's is still its hold
    with pytest.raises(AirflowFailException):
        ledger_step.verdict("orders", held, DAG, "manual__2026-11-22T10:00:00+00:00")
    note = ledger_step.run_note(ledger.batch_entry(lake, "orders", "20261120"))
    assert note.startswith("RELEASED by alice at ")
    assert ": the bad rows are a test feed: batch 20261120" in note
    assert "held because: quarantine rate 30.00% >= hold_rate" in note


def test_a_release_notes_the_held_run_and_clears_its_verdict_task(lake, caplog):
    recorded(lake, "held")
    staged_rows(lake)
    release_batch(lake, "orders", "20261120", "a test feed", "alice")
    api = FakeAirflowApi().start()
    try:
        shown = ledger_step.show_release("orders", "20261120",
                                         AirflowApi(api.url, "admin", "admin", timeout=5))
    finally:
        api.close()
    assert shown == {"run": ["foodtaster_orders", RUN], "cleared": 1}
    (_, _, _login), (patch, note_path, note), (post, clear_path, clear) = api.requests
    assert (patch, post, clear_path) == ("PATCH", "POST", "/api/v2/dags/foodtaster_orders/clearTaskInstances")
    assert note_path.startswith("/api/v2/dags/foodtaster_orders/dagRuns/scheduled__2026-11-20")
    assert note["note"].startswith("RELEASED by alice at ")
    assert clear["task_ids"] == ["verdict"] and clear["dag_run_id"] == RUN and clear["only_failed"]
    assert clear["dry_run"] is False
    # no API (`airflow dags test`): the release stands, the log says what to clear by hand
    unreachable = AirflowApi(api.url, "a", "b", timeout=2)
    assert ledger_step.show_release("orders", "20261120", unreachable)["cleared"] == 0
    assert "clear the run's verdict task in the UI" in caplog.text


def test_the_self_pause_is_the_held_runs_last_act_once(lake, monkeypatch):
    """Paused by the ledger task, the DAG would never schedule the verdict task: the run would
    stay running. The verdict task pauses it, on its first try only (a clear says the verdict
    again, it does not pause again)."""
    paused = []
    monkeypatch.setattr(ledger_step, "disable", lambda *args: paused.append(args[:3]))
    held = {**recorded(lake, "held"), "held_streak": 3, "pause_due": True}
    for try_number in (1, 2):
        with pytest.raises(AirflowFailException):
            ledger_step.verdict("orders", held, DAG, RUN, try_number)
    assert paused == [("orders", "foodtaster_orders", 3)]
    with pytest.raises(AirflowFailException):
        ledger_step.verdict("orders", {**held, "pause_due": False}, DAG, RUN)
    assert len(paused) == 1
