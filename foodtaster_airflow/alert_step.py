"""The alert task: a batch's alert with the dataset's trend up to it, delivered through the
dataset's channels (`foodtaster_airflow.channels`). Thin: the alert is built by
`foodtaster.ops.alerts`, the trend by `foodtaster.ops.trend`. Also a task's refusal of its run
(`refuse`): noted on the run, alerted, and failed at once.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from foodtaster.errors import REFUSED_PREFIX
from foodtaster.lake_paths import lake_root
from foodtaster.registry import DatasetConfig, get_dataset
from foodtaster.state.lake import Lake
from foodtaster_airflow import channels, ledger_step

log = logging.getLogger(__name__)


def alert(dataset: str, handed: dict[str, Any]) -> dict[str, Any]:
    """Alert when the verdict says so (rate at alert_rate, or the batch held)."""
    from airflow.sdk.exceptions import AirflowSkipException

    from foodtaster.ops import alerts
    from foodtaster.ops.trend import producers_ranked
    from foodtaster.state.lake import read_json
    from foodtaster.summary import Decision

    decision = Decision.from_json(handed)
    verdict = decision.verdict
    if not verdict.alert:
        raise AirflowSkipException("quarantine rate below alert_rate and the batch gate passed")
    config = get_dataset(dataset)
    lake = Lake(decision.lake)
    summary = read_json(decision.summary_path)
    trend, chart = alert_trend(lake, config, summary, verdict.publish)
    dag_id, run_id = current_run(dataset)
    message = alerts.build_batch_alert(
        summary, verdict, config, {},
        trend=trend, chart_png=chart, run_url=channels.run_url(dag_id, run_id) if run_id else None,
        producers=producers_ranked(lake, dataset, [(decision.batch_date, decision.batch_id)],
                                   config.producer),
        lake=lake,
    )
    return channels.deliver(message, config, lake).as_dict()


ALERT_TREND_BATCHES = 30  # batches the alert's chart draws, up to and with this one


def alert_trend(lake: Lake, config: DatasetConfig, summary: dict[str, Any],
                publish: bool) -> tuple[Any, bytes | None]:
    """The dataset's trend up to this batch (it is not in the ledger yet) and its chart.
    A chart that cannot be drawn costs the alert its image, never the alert."""
    import time

    from foodtaster.ops import trend, trend_chart
    from foodtaster.state import ledger

    started = time.perf_counter()
    pending = ledger.pending_entry(summary, publish)
    found = trend.dataset_trend(lake, config, until=summary["batch_date"], pending=pending,
                                limit=ALERT_TREND_BATCHES)
    try:
        chart = trend_chart.render_trend(found)
    except Exception as err:  # noqa: BLE001 - the alert goes out without its picture
        log.warning("dataset=%s batch=%s event=trend_chart_failed %s", config.name,
                    summary["batch_id"], err)
        chart = None
    log.info("dataset=%s batch=%s event=trend_drawn batches=%d seconds=%.3f", config.name,
             summary["batch_id"], len(found.batches), time.perf_counter() - started)
    return found, chart


def current_run(dataset: str) -> tuple[str, str | None]:
    """The DAG id and run id of the task running now (None outside a task)."""
    dag_id = f"foodtaster_{dataset}"
    try:
        from airflow.sdk import get_current_context

        context = get_current_context()
    except Exception:  # noqa: BLE001 - called outside a task (tests, the CLI)
        return dag_id, None
    return getattr(context.get("dag"), "dag_id", dag_id), context.get("run_id")


def refuse(dataset: str, batch_id: str | None, batch_date: str | None, task: str, reason: str,
           dag_id: str, run_id: str) -> NoReturn:
    """A task refused its run (`foodtaster.errors.refusal`): note it on the run, alert, and fail
    the task at once, without retries, the reason as its last log line. `batch_id` is the batch
    the run landed; None when it was refused before landing: a refusal is filed under its run,
    never under a batch its conf only named. An infrastructure failure never comes here: it is
    raised as it is, and retried."""
    from airflow.sdk.exceptions import AirflowFailException

    from foodtaster.ops import alerts
    from foodtaster.state.refusals import Refusal, record_refusal

    reason = " ".join(reason.removeprefix(REFUSED_PREFIX).split())
    date = f", inbox date {batch_date}" if batch_date else ""
    record_refusal(Lake(lake_root()), dataset, Refusal(batch_id, batch_date, task, reason, dag_id, run_id))
    refused = f"batch {batch_id}{date}" if batch_id else f"run {run_id}, nothing landed{date}"
    ledger_step.note_run(dataset, batch_id or "none", dag_id, run_id, f"{REFUSED_PREFIX}{refused}: {reason}")
    message = alerts.build_refusal_alert(dataset, batch_id, batch_date, task, reason, run_id=run_id,
                                         run_url=channels.run_url(dag_id, run_id))
    try:
        delivery = channels.deliver(message, get_dataset(dataset), Lake(lake_root()))
        channels.log_delivery(dataset, batch_id or "none", "refusal_alerted", delivery, Lake(lake_root()))
    except Exception as err:  # noqa: BLE001 - the refusal stands; its alert is the courtesy
        log.warning("dataset=%s batch=%s event=refusal_alert_failed %s", dataset, batch_id, err)
    log.error("%s%s", REFUSED_PREFIX, reason)
    raise AirflowFailException(REFUSED_PREFIX + reason)
