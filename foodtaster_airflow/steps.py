"""The bodies of the DAG's Python tasks up to publishing: plain functions over the engine
(the alert task's and a refusal's are in `alert_step`, the ledger's and the verdict's, with
the run's note and the self-pause, in `ledger_step`).

The factory wraps each in a `@task`; everything here reads the registry and the lake
at run time (never at parse time) and passes small JSON documents between tasks.
Engine modules are imported inside the functions so parsing a DAG stays light.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from foodtaster.errors import Failed, NotFound
from foodtaster.lake_paths import lake_root
from foodtaster.landing import LandingResult
from foodtaster.registry import DatasetConfig, get_dataset
from foodtaster.state.lake import Lake, check_batch_id, check_date

if TYPE_CHECKING:
    from foodtaster.summary import BatchSummary, BatchTables

log = logging.getLogger(__name__)
HOURLY_SCHEDULES = {"@hourly", "0 * * * *"}
TOP_REASONS = 5


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


def land(dataset: str, date: str, hour: int | None, batch_id: str | None,
         woken_at: datetime | None = None) -> dict[str, Any]:
    """Land the interval's new messages from the dataset's source (inbox files, a broker), or
    (with a batch id) the landed batch again, or (`woken_at`: a run the Kafka wake-up started)
    a batch of its own: the landing's JSON form (`LandingResult`)."""
    from foodtaster import sources
    from foodtaster.sources.raw_batch import batch_id_for
    from foodtaster.state import ledger
    from foodtaster.state.lake import new_run_id
    from foodtaster.state.lease import batch_lease

    config, lake = _config(dataset), lake_from_env()
    # A contract that cannot be read (a refused option, a remote $ref, a missing file) is refused
    # here, before anything lands, not by the validate task after.
    config.read_contract()
    reprocess = bool(batch_id)
    if batch_id:
        date = landed_date(lake, dataset, check_batch_id(batch_id))
        hour = None
    elif woken_at is not None:
        date, hour, batch_id = woken_at.date().isoformat(), None, woken_batch_id(woken_at)
    # The scheduled DAG and the reprocess DAG may land one batch at once (each DAG lands one
    # at a time): the batch's lease keeps them from claiming and recording its files together.
    with batch_lease(lake, dataset, batch_id or batch_id_for(date, hour), f"land-{new_run_id()}"):
        result = sources.land(config, lake, date, batch_id=batch_id, hour=hour,
                              connection=source_connection(config))
    # A dataset that paused itself runs again only when an operator unpaused its DAG.
    ledger.re_enable(lake, dataset, result.batch_id)
    return replace(result, reprocess=reprocess).as_dict()


def woken_at(context: dict[str, Any]) -> datetime | None:
    """When the Kafka wake-up started this run (an Asset-triggered run has no logical date);
    None for any other run."""
    dag_run = context.get("dag_run")
    if dag_run is None or str(getattr(dag_run, "run_type", "")) != "asset_triggered":
        return None
    return (context.get("run_after") or datetime.now(UTC)).astimezone(UTC)


def woken_batch_id(at: datetime) -> str:
    """A woken run's batch: `YYYYMMDDTHHMMSS` of when it was woken, one batch a wake-up (a
    rerun of the run lands into it again)."""
    return check_batch_id(at.astimezone(UTC).strftime("%Y%m%dT%H%M%S"))


def source_connection(config: DatasetConfig) -> dict[str, Any] | None:
    """A broker source's client settings from its Airflow connection, read at run time; None
    for a source without one."""
    from foodtaster.registry import KafkaSource

    if isinstance(config.source, KafkaSource):
        return kafka_connection(config.source.kafka_conn_id)
    return None


def kafka_connection(conn_id: str) -> dict[str, Any]:
    """The extra of a connection of the Kafka provider's type: the librdkafka config. Airflow
    masks its secret values (`sasl.password`, ...) in every log from here on."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    from foodtaster.sources.kafka import KafkaSettingsError

    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise KafkaSettingsError(f"the Kafka connection {conn_id!r} is not defined: add it with conn type "
                                 "'kafka', its extra the librdkafka config (bootstrap.servers, "
                                 "security.protocol, sasl.*)") from None
    if connection.conn_type != "kafka":
        raise KafkaSettingsError(f"connection {conn_id!r} is of type {connection.conn_type!r}, not 'kafka' "
                                 "(the Kafka provider's type, whose extra is the librdkafka config)")
    return dict(connection.extra_dejson)


def dead_letters(dataset: str, handed: dict[str, Any]) -> dict[str, Any]:
    """Produce the batch's quarantined messages to its Kafka source's dead-letter topic, once
    each (`foodtaster.sources.dead_letters`); run after validate wrote the quarantine."""
    from foodtaster.registry import KafkaSource
    from foodtaster.sources import dead_letters as letters

    config = _config(dataset)
    source = config.source
    if not isinstance(source, KafkaSource):
        raise PipelineError(f"dataset {dataset!r} has no kafka source: no dead-letter topic")
    landed = LandingResult.from_dict(handed)
    return letters.send(source, Lake(landed.lake), dataset, landed.batch_date, landed.batch_id,
                        kafka_connection(source.kafka_conn_id)).as_dict()


def landed_date(lake: Lake, dataset: str, batch_id: str) -> str:
    """The batch date of a batch that was landed before (its raw partition's folder)."""
    from foodtaster.state.browse import landed_batches

    landed = [(raw.batch_date, raw.batch_id) for raw in landed_batches(lake, dataset)]
    dates = sorted({day for day, landed_id in landed if landed_id == batch_id})
    if not dates:
        raise BatchNotLanded(
            f"batch {batch_id} of {dataset} was never landed (no raw partition): a batch id "
            "is YYYYMMDD as a daily run lands it (YYYYMMDDHH hourly); "
            f"{_landed_near(landed, batch_id)}. To land an inbox date's files, trigger the DAG "
            f"foodtaster_{dataset} with that date as its logical date"
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


# ----------------------------------------------------------------- read_verdict


def read_verdict(dataset: str, handed: dict[str, Any]) -> dict[str, Any]:
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
    """Move main of the valid table to the batch's audit branch; the Asset event carries the
    table, the snapshot, its tag and the counts."""
    from airflow.sdk.exceptions import AirflowSkipException

    from foodtaster.summary import Decision

    decision = Decision.from_json(handed)
    if not decision.verdict.publish:
        raise AirflowSkipException("batch held: " + "; ".join(decision.verdict.why))
    tables = publish_judged(Lake(decision.lake), dataset, handed)
    extra = {
        "dataset": dataset,
        "batch_id": decision.batch_id,
        "batch_date": decision.batch_date,
        "table": tables.valid,
        "snapshot_id": tables.published_snapshot,
        "tag": tables.tag,
        **decision.counts,
    }
    outlet_event.extra = extra
    log.info("dataset=%s batch=%s event=published table=%s snapshot=%s tag=%s valid=%s", dataset,
             decision.batch_id, tables.valid, tables.published_snapshot, tables.tag,
             decision.counts["valid"])
    return extra


def publish_judged(lake: Lake, dataset: str, handed: dict[str, Any]) -> BatchTables:
    """Publish the run the gate judged (`foodtaster.state.publish.publish_judged`): the batch,
    the judged run and its summary, as the decision read_verdict passed on (its XCom) names them."""
    from foodtaster.state import publish as publishing

    try:
        summary = publishing.publish_judged(lake, dataset, handed["batch_id"], handed.get("run_id"),
                                            handed["summary_path"])
    except (publishing.UnjudgedRunError, publishing.NothingStaged) as err:
        raise PipelineError(str(err)) from err
    assert summary.tables is not None
    return summary.tables
