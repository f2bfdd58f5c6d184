"""The ledger and verdict tasks, with what belongs to a run's record of its batch: the run's
note (`note_run`, through the REST API), the self-pause after `disable_after` held batches
(`disable`), and a release shown on the held batch's own run (`show_release`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from foodtaster.landing import LandingResult
from foodtaster.registry import DatasetConfig, get_dataset
from foodtaster.state.lake import Lake
from foodtaster_airflow import channels
from foodtaster_airflow.steps import PipelineError, lake_from_env

if TYPE_CHECKING:
    from foodtaster.state.ledger import LedgerEntry
    from foodtaster_airflow.rest import AirflowApi

log = logging.getLogger(__name__)
RUN_NOTE_CHARS = 1000  # Airflow's limit for a run's note
NOTE_TRIES = 3  # a note the API failed to store (HTTP 5xx) is sent again, 1 s then 2 s later


def ledger(
    dataset: str,
    landed: dict[str, Any],
    decision: dict[str, Any] | None,
    published: dict[str, Any] | None,
    alerted: dict[str, Any] | None,
    dag_id: str,
    run_id: str,
) -> dict[str, Any]:
    """Record the batch, and say whether the DAG's self-pause is due (`disable_after` held
    batches in a row): the verdict task, the run's last, pauses it. Paused here, the DAG would
    leave that task unscheduled and the run running until someone unpaused it."""
    from foodtaster.state import ledger as batch_ledger
    from foodtaster.summary import Decision

    landing = LandingResult.from_dict(landed)
    lake = Lake(landing.lake)
    config = get_dataset(dataset)
    entry = batch_ledger.ledger_entry(landing, Decision.from_json(decision) if decision else None,
                                      bool(published), alerted, dag_id, run_id)
    recorded = batch_ledger.record_run(lake, dataset, entry, config.disable_after)
    log.info("dataset=%s batch=%s event=recorded verdict=%s", dataset, entry["batch_id"],
             entry["verdict"])
    return {"entry": entry, "held_streak": recorded.held_streak, "pause_due": recorded.pause_due,
            "note": note_run(dataset, entry["batch_id"], dag_id, run_id, run_note(entry))}


VERDICT_TASK = "verdict"  # the run's last task: red when its batch is held (docs/decisions/017)


def verdict(dataset: str, recorded: dict[str, Any], dag_id: str, run_id: str,
            try_number: int = 1) -> dict[str, Any]:
    """The run's last word on its batch, where an engineer scanning Airflow looks: the run's
    state. Fails (no retry) when the batch is held, so the run is red in the runs list, the
    grid and the DAG list; skipped for an empty landing; done when the batch was published.
    A hold that makes the self-pause due (`ledger`) pauses the scheduled DAG first, on the
    task's first try only: cleared later, it says its verdict again, it does not pause again.

    Read again when the task is cleared: a held batch released since (its ledger record, still
    of this run, says `released`) ends it green, with who released it and why
    (docs/decisions/017-a-held-batch-fails-its-run.md).
    """
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    from foodtaster.state.ledger import batch_entry

    entry = recorded["entry"]
    batch = f"batch {entry['batch_id']}, inbox date {entry['batch_date']}"
    now = batch_entry(lake_from_env(), dataset, entry["batch_id"])
    released = now.get("released") if now is not None and now.get("run_id") == run_id else None
    if now is not None and released:
        log.info("RELEASED by %s at %s: %s (%s; held because: %s)", released["by"], released["at"],
                 released["why"], batch, _because(now.get("held_why")))
        # cleared by hand after a release the run's note has not heard of (the CLI's, the demo's)
        note_run(dataset, entry["batch_id"], dag_id, run_id, run_note(now))
        return {"verdict": "released", "released": released}
    if entry["verdict"] == "empty":
        raise AirflowSkipException(f"empty: {batch}: no new files in the inbox")
    if entry["verdict"] != "held":
        log.info("published: %s: %s valid, %s quarantined", batch, entry["valid"], entry["quarantined"])
        return {"verdict": entry["verdict"]}
    if recorded.get("pause_due") and try_number == 1:
        # the scheduled DAG pauses, whichever DAG's run (it or the reprocess DAG) held the batch
        config = get_dataset(dataset)
        disable(dataset, f"foodtaster_{dataset}", recorded["held_streak"], config, lake_from_env())
    log.warning("held because: %s", _because(entry.get("why")))
    log.warning(
        "what to do: read the reasons and samples on the Foodtaster batches page (Browse); then "
        "release the batch (`foodtaster release --dataset %s --batch %s --why ...`, or the DAG "
        "foodtaster_%s_redrive's Release held batch), redrive its rows after a fix, or leave it "
        "held. A release through the redrive DAG clears this task, which then ends green; after "
        "a release from the command line, clear it by hand.", dataset, entry["batch_id"], dataset)
    raise AirflowFailException(f"HELD, not published: {batch}: " + _because(entry.get("why")))


def show_release(dataset: str, batch_id: str, api: AirflowApi | None = None) -> dict[str, Any]:
    """After a release: the held batch's own run says so. Its note becomes the release (who,
    when, why) and its verdict task is cleared, so the scheduler runs it again and the run
    turns green. Never fails the release: without the API (`airflow dags test`) it is logged,
    with what to clear by hand."""
    from foodtaster.state.ledger import batch_entry
    from foodtaster_airflow.rest import API_CONN_ID, AirflowApi

    entry = batch_entry(lake_from_env(), dataset, batch_id)
    if entry is None:
        return {"run": None, "cleared": 0}
    dag_id, run_id, released = entry.get("dag_id"), entry.get("run_id"), entry.get("released")
    if not (dag_id and run_id and released):
        return {"run": None, "cleared": 0}
    shown: dict[str, Any] = {"run": [dag_id, run_id], "cleared": 0}
    note = run_note(entry)
    if api is None:
        conn = channels.get_connection(API_CONN_ID)
        api = AirflowApi.from_connection(conn) if conn is not None else None
    try:
        if api is None:
            raise PipelineError(f"no {API_CONN_ID!r} connection")
        api.set_note(dag_id, run_id, note[:RUN_NOTE_CHARS])
        shown["cleared"] = api.clear_task(dag_id, run_id, VERDICT_TASK)
    except Exception as err:  # noqa: BLE001 - the batch is released; its run's colour is a courtesy
        log.warning("dataset=%s batch=%s event=release_not_shown_on_run run=%s %s: clear the "
                    "run's %s task in the UI to turn it green", dataset, batch_id, run_id, err,
                    VERDICT_TASK)
    return shown


def _because(why: Any) -> str:
    """A verdict's why as a note reads it: what held the batch, then what it only notes."""
    from foodtaster.policy import split_why

    reasons, facts = split_why([why] if isinstance(why, str) else list(why or ()))
    return "; ".join(reasons) + "".join(f" (also: {fact})" for fact in facts)


def run_note(entry: LedgerEntry) -> str:
    """The run's note: the batch's verdict first (a held batch stands out in the runs list),
    then its batch id and inbox date, which Airflow's own run labels do not show."""
    batch = f"batch {entry['batch_id']}, inbox date {entry['batch_date']}"
    if entry["verdict"] == "empty":
        return f"empty: {batch}: no new files in the inbox"
    rate = (f"{entry['quarantined']} quarantined of {entry['messages']} "
            f"({float(entry['quarantine_rate']):.2%})")
    if entry.get("released"):
        released = entry["released"]
        return (f"RELEASED by {released['by']} at {released['at']}: {released['why']}: {batch}: "
                f"{rate}; held because: " + _because(entry.get("held_why") or ()))
    if entry["verdict"] == "held":
        return f"HELD, not published: {batch}: {rate}; " + _because(entry["why"])
    return f"published: {batch}: {entry['valid']} valid, {rate}"


def landing_note(handed: dict[str, Any]) -> str:
    """The run's note until the ledger replaces it: a run that fails later still names its batch."""
    landed = LandingResult.from_dict(handed)
    return f"batch {landed.batch_id}, inbox date {landed.batch_date}: {landed.messages} messages landed"


def note_run(dataset: str, batch_id: str, dag_id: str, run_id: str, note: str,
             api: AirflowApi | None = None) -> bool:
    """Set the run's note through the REST API's official client (connection `airflow_api`):
    the task SDK cannot set it. A run never fails over its note: without the API it is only logged."""
    from foodtaster_airflow.rest import API_CONN_ID, AirflowApi, AirflowApiError

    if api is None:
        conn = channels.get_connection(API_CONN_ID)
        if conn is None:
            log.info("dataset=%s batch=%s event=run_note_skipped no %r connection; note: %s",
                     dataset, batch_id, API_CONN_ID, note)
            return False
        api = AirflowApi.from_connection(conn)
    for attempt in range(1, NOTE_TRIES + 1):
        try:
            api.set_note(dag_id, run_id, note[:RUN_NOTE_CHARS])
            return True
        except Exception as err:  # noqa: BLE001 - the note is a courtesy, the batch is done
            failure = err
            # An API that answered with a server error may answer the next time: on SQLite, a
            # metadata database busy with the scheduler's writes fails the note's update.
            if not (isinstance(err, AirflowApiError) and (err.status or 0) >= 500) or attempt == NOTE_TRIES:
                break
            time.sleep(attempt)
    log.warning("dataset=%s batch=%s event=run_note_failed run=%s %s; note: %s",
                dataset, batch_id, run_id, failure, note)
    return False


def disable(dataset: str, dag_id: str, streak: int, config: DatasetConfig,
            lake: Lake) -> dict[str, Any]:
    """Pause the DAG through the REST API, mark the dataset disabled, send the alert.

    The alert goes out even when the pause fails; the task then fails so the failure
    shows in the UI.
    """
    from foodtaster.ops import alerts
    from foodtaster.state import ledger as batch_ledger
    from foodtaster_airflow.rest import API_CONN_ID, AirflowApi

    reason = f"{streak} held batches in a row (disable_after={config.disable_after})"
    batch_ledger.record_disabled(lake, dataset, reason)
    conn = channels.get_connection(API_CONN_ID)
    pause_error = None
    if conn is None:
        pause_error = f"no {API_CONN_ID!r} connection: the DAG cannot pause itself"
    else:
        try:
            AirflowApi.from_connection(conn).set_paused(dag_id, True)
            log.warning("dataset=%s event=dag_paused dag=%s %s", dataset, dag_id, reason)
        except Exception as err:  # noqa: BLE001 - reported below, after the alert went out
            pause_error = f"pausing {dag_id} failed: {err}"
    message = alerts.build_disabled_alert(dataset, batch_ledger.held_batches(lake, dataset), config)
    delivery = channels.deliver(message, config, lake).as_dict()
    if pause_error:
        raise PipelineError(pause_error + f" (the dataset-disabled alert went to {delivery})")
    return {"dag_id": dag_id, "paused": True, "reason": reason, "alert": delivery}
