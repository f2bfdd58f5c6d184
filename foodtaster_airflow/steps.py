"""The bodies of the DAG's Python tasks: plain functions over the engine.

The factory wraps each in a `@task`; everything here reads the registry and the lake
at run time (never at parse time) and passes small JSON documents between tasks.
Engine modules are imported inside the functions so parsing a DAG stays light.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from foodtaster.errors import REFUSED_PREFIX, Failed, NotFound
from foodtaster.landing import LandingResult
from foodtaster.registry import DatasetConfig, get_dataset, lake_root
from foodtaster.state.lake import Lake, check_batch_id, check_date
from foodtaster_airflow import channels

if TYPE_CHECKING:
    from foodtaster.state.ledger import LedgerEntry
    from foodtaster.summary import BatchSummary
    from foodtaster_airflow.rest import AirflowApi

log = logging.getLogger(__name__)
HOURLY_SCHEDULES = {"@hourly", "0 * * * *"}
TOP_REASONS = 5
RUN_NOTE_CHARS = 1000  # Airflow's limit for a run's note


class PipelineError(Failed):
    """A run cannot go on: a summary is missing, a pause failed."""


class BatchNotLanded(NotFound):
    """The batch id to reprocess names no landed batch: a refusal, not retried."""


def _config(dataset: str) -> DatasetConfig:
    return get_dataset(dataset)


def lake_from_env() -> Lake:
    """The lake the deployment names (`FOODTASTER_LAKE`, else ./data/lake)."""
    return Lake(lake_root())


# ------------------------------------------------------------------------- land


def run_interval(context: dict[str, Any], params: dict[str, Any] | None,
                 schedule: str | None) -> tuple[str, int | None]:
    """The inbox partition of a run: (date, hour or None).

    The `batch_date` param wins; else the run's logical date: a scheduled or backfill
    run's data interval starts there, and `dags test <dag> 2026-11-20` or a manual run
    for a date names it (Airflow gives those the interval *ending* at that date). A
    manual run without a logical date takes the day before it was triggered.
    """
    params = params or {}
    if params.get("batch_date"):
        return check_date(str(params["batch_date"])[:10]), None
    start = context.get("logical_date") or context.get("data_interval_start")
    if start is None:
        start = (context.get("run_after") or datetime.now(UTC)) - timedelta(days=1)
    start = start.astimezone(UTC)
    hour = start.hour if schedule in HOURLY_SCHEDULES else None
    return start.date().isoformat(), hour


def land(dataset: str, date: str, hour: int | None, batch_id: str | None) -> dict[str, Any]:
    """Land the interval's new messages from the dataset's source (inbox files, a broker), or
    (with a batch id) the landed batch again: the landing's JSON form (`LandingResult`)."""
    from foodtaster import sources
    from foodtaster.sources.raw_batch import batch_id_for
    from foodtaster.state import ledger
    from foodtaster.state.lake import new_run_id
    from foodtaster.state.lease import batch_lease

    lake = lake_from_env()
    if batch_id:
        date = landed_date(lake, dataset, check_batch_id(batch_id))
        hour = None
    # The scheduled DAG and the reprocess DAG may land one batch at once (each DAG lands one
    # at a time): the batch's lease keeps them from claiming and recording its files together.
    with batch_lease(lake, dataset, batch_id or batch_id_for(date, hour), f"land-{new_run_id()}"):
        result = sources.land(_config(dataset), lake, date, batch_id=batch_id, hour=hour)
    # A dataset that paused itself runs again only when an operator unpaused its DAG.
    ledger.re_enable(lake, dataset, result.batch_id)
    return replace(result, reprocess=bool(batch_id)).as_dict()


def landed_date(lake: Lake, dataset: str, batch_id: str) -> str:
    """The batch date of a batch that was landed before (its raw partition's folder)."""
    from foodtaster.state.browse import partitions

    landed = [(raw.batch_date, raw.batch_id) for raw in partitions(lake, "raw", dataset)]
    dates = sorted({day for day, landed_id in landed if landed_id == batch_id})
    if not dates:
        raise BatchNotLanded(
            f"batch {batch_id!r} of {dataset!r} was never landed (no raw partition): a batch id "
            "is YYYYMMDD as a daily run lands it (YYYYMMDDHH hourly); "
            f"{_landed_near(landed, batch_id)}. To land new files, trigger without batch_id"
        )
    if len(dates) > 1:
        raise PipelineError(f"batch {batch_id!r} of {dataset!r} is under several dates: {dates}")
    return dates[0]


LANDED_NEAR_DAYS = 3  # how far from the asked date a never-landed message looks
LANDED_SHOWN = 10  # batch ids a never-landed message lists at most


def _landed_near(landed: list[tuple[str, str]], batch_id: str) -> str:
    """The landed batches (id and date) near the date a mistyped batch id names, or the latest
    ones when it names none: `2026-11-11` and `20261111x` both mean 2026-11-11."""
    digits = re.sub(r"\D", "", batch_id)[:8]
    try:
        asked = datetime.strptime(digits, "%Y%m%d").date() if len(digits) == 8 else None
    except ValueError:
        asked = None
    if asked is None:
        shown, where = sorted(landed)[-LANDED_SHOWN:], "latest landed"
    else:
        shown = sorted(
            (day, landed_id) for day, landed_id in landed
            if abs((datetime.strptime(day, "%Y-%m-%d").date() - asked).days) <= LANDED_NEAR_DAYS
        )[:LANDED_SHOWN]
        where = f"landed within {LANDED_NEAR_DAYS} days of {asked.isoformat()}"
    if not shown:
        return f"none {where}" if landed else "no batch was landed yet"
    return f"{where}: " + ", ".join(f"{landed_id} ({day})" for day, landed_id in shown)


def has_messages(handed: dict[str, Any]) -> bool:
    """Go on to validation unless the landing holds no file at all."""
    landed = LandingResult.from_dict(handed)
    if landed.empty:
        log.info("dataset=%s batch=%s event=empty_batch no new files in the inbox: nothing to "
                 "validate", landed.dataset, landed.batch_id)
        return False
    return True


# ------------------------------------------------------------------------- gate


def gate(dataset: str, handed: dict[str, Any]) -> dict[str, Any]:
    """Read the batch summary and pass on its verdict (decided once, by the job: publish or
    hold, alert or not) with what the later tasks need."""
    from foodtaster.state.lake import exists, read_json
    from foodtaster.summary import BatchSummary, Decision

    landed = LandingResult.from_dict(handed)
    lake = Lake(landed.lake)
    batch_id = landed.batch_id
    uri = lake.summary(dataset, batch_id)
    if not exists(uri):
        raise PipelineError(f"the validation job wrote no summary at {uri}")
    summary = BatchSummary.from_json(read_json(uri))
    verdict = summary.verdict
    decision = Decision(
        dataset=dataset, batch_id=batch_id, batch_date=landed.batch_date, lake=lake.root,
        verdict=verdict, counts=_counts(summary), top_reasons=top_reasons(summary.reasons),
        gate_failed=summary.gate.failed_expectations, run_id=summary.run_id, paths=summary.paths,
        summary_path=uri,
    )
    log.info(
        "dataset=%s batch=%s event=gate publish=%s alert=%s severity=%s rate=%.4f why=%s",
        dataset, batch_id, verdict.publish, verdict.alert, verdict.severity,
        summary.quarantine_rate, "; ".join(verdict.why) or "-",
    )
    return decision.to_json()


def _counts(summary: BatchSummary) -> dict[str, Any]:
    return {
        "messages": summary.messages,
        "valid": summary.valid,
        "quarantined": summary.quarantined,
        "duplicates_dropped": summary.duplicates_dropped,
        "listed": summary.listed,
        "quarantine_rate": summary.quarantine_rate,
    }


def top_reasons(reasons: dict[str, int], limit: int = TOP_REASONS) -> list[list[Any]]:
    return [[rule, count] for rule, count in
            sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:limit]]


# ---------------------------------------------------------------------- publish


def publish(dataset: str, handed: dict[str, Any], outlet_event: Any) -> dict[str, Any]:
    """Make the staged valid rows visible; the Asset event carries the counts."""
    from airflow.sdk.exceptions import AirflowSkipException

    from foodtaster.summary import Decision

    decision = Decision.from_json(handed)
    if not decision.verdict.publish:
        raise AirflowSkipException("batch held: " + "; ".join(decision.verdict.why))
    path = publish_judged(Lake(decision.lake), dataset, handed)
    extra = {
        "dataset": dataset,
        "batch_id": decision.batch_id,
        "batch_date": decision.batch_date,
        "path": path,
        **decision.counts,
    }
    outlet_event.extra = extra
    log.info("dataset=%s batch=%s event=published path=%s valid=%s", dataset,
             decision.batch_id, path, decision.counts["valid"])
    return extra


def publish_judged(lake: Lake, dataset: str, handed: dict[str, Any]) -> str:
    """Publish the run the gate judged (`foodtaster.state.publish.publish_judged`): the batch,
    the judged run and its summary, as the gate's decision (its XCom) names them."""
    from foodtaster.state import publish as publishing

    try:
        return publishing.publish_judged(lake, dataset, handed["batch_date"], handed["batch_id"],
                                         handed.get("run_id"), handed["summary_path"])
    except publishing.UnjudgedRunError as err:
        raise PipelineError(str(err)) from err


# ----------------------------------------------------------------------- ledger


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
    config = _config(dataset)
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
                 released["why"], batch, "; ".join(now.get("held_why") or ()))
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
        config = _config(dataset)
        disable(dataset, f"foodtaster_{dataset}", recorded["held_streak"], config, lake_from_env())
    for why in entry.get("why") or ():
        log.warning("held because: %s", why)
    log.warning(
        "what to do: read the reasons and samples on the Foodtaster batches page (Browse); then "
        "release the batch (`foodtaster release --dataset %s --batch %s --why ...`, or the DAG "
        "foodtaster_%s_redrive's Release held batch), redrive its rows after a fix, or leave it "
        "held. A release through the redrive DAG clears this task, which then ends green; after "
        "a release from the command line, clear it by hand.", dataset, entry["batch_id"], dataset)
    raise AirflowFailException(f"HELD, not published: {batch}: " + "; ".join(entry.get("why") or ()))


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
                f"{rate}; held because: " + "; ".join(entry.get("held_why") or ()))
    if entry["verdict"] == "held":
        return f"HELD, not published: {batch}: {rate}; " + "; ".join(entry["why"])
    return f"published: {batch}: {entry['valid']} valid, {rate}"


def landing_note(handed: dict[str, Any]) -> str:
    """The run's note until the ledger replaces it: a run that fails later still names its batch."""
    landed = LandingResult.from_dict(handed)
    return f"batch {landed.batch_id}, inbox date {landed.batch_date}: {landed.messages} messages landed"


def refuse(dataset: str, batch_id: str, batch_date: str | None, task: str, reason: str,
           dag_id: str, run_id: str) -> NoReturn:
    """A task refused its run (`foodtaster.errors.refusal`): note it on the run, alert, and fail
    the task at once, without retries, the reason as its last log line. An infrastructure
    failure never comes here: it is raised as it is, and retried."""
    from airflow.sdk.exceptions import AirflowFailException

    from foodtaster.ops import alerts

    reason = " ".join(reason.removeprefix(REFUSED_PREFIX).split())
    date = f", inbox date {batch_date}" if batch_date else ""
    note_run(dataset, batch_id, dag_id, run_id, f"{REFUSED_PREFIX}batch {batch_id}{date}: {reason}")
    message = alerts.build_refusal_alert(dataset, batch_id, batch_date, task, reason,
                                         run_url=channels.run_url(dag_id, run_id))
    try:
        delivery = channels.deliver(message, _config(dataset), lake_from_env()).as_dict()
        log.info("dataset=%s batch=%s event=refusal_alerted %s", dataset, batch_id, delivery)
    except Exception as err:  # noqa: BLE001 - the refusal stands; its alert is the courtesy
        log.warning("dataset=%s batch=%s event=refusal_alert_failed %s", dataset, batch_id, err)
    log.error("%s%s", REFUSED_PREFIX, reason)
    raise AirflowFailException(REFUSED_PREFIX + reason)


def note_run(dataset: str, batch_id: str, dag_id: str, run_id: str, note: str,
             api: AirflowApi | None = None) -> bool:
    """Set the run's note through the REST API's official client (connection `airflow_api`):
    the task SDK cannot set it. A run never fails over its note: without the API it is only logged."""
    from foodtaster_airflow.rest import API_CONN_ID, AirflowApi

    if api is None:
        conn = channels.get_connection(API_CONN_ID)
        if conn is None:
            log.info("dataset=%s batch=%s event=run_note_skipped no %r connection; note: %s",
                     dataset, batch_id, API_CONN_ID, note)
            return False
        api = AirflowApi.from_connection(conn)
    try:
        api.set_note(dag_id, run_id, note[:RUN_NOTE_CHARS])
    except Exception as err:  # noqa: BLE001 - the note is a courtesy, the batch is done
        log.warning("dataset=%s batch=%s event=run_note_failed run=%s %s; note: %s",
                    dataset, batch_id, run_id, err, note)
        return False
    return True


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


def retry_work(dataset: str, lake_uri: str) -> str | None:
    """Why the retry pass of `dataset` must run now, or None: then the retry task starts no
    Spark (foodtaster.state.retries reads the lake with pyarrow) and imports no engine module.
    (pandera itself imports pyspark.pandas when pyspark is installed: that import stays.)"""
    from foodtaster.contract_references import read_references, retryable
    from foodtaster.state.retries import retry_work as due_work

    config = _config(dataset)
    policies = retryable(read_references(config.load_contract()))
    return due_work(Lake(lake_uri), dataset, policies, config.group_by, datetime.now(UTC))
