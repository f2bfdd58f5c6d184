"""What a run of a dataset's DAG may be asked, checked before it lands anything.

A run's conf comes from the trigger form, the REST API, `airflow dags trigger -c` or a
backfill. A key the DAG does not use, or one this kind of run cannot use, refuses the run at
once (a `UsageError`: `foodtaster.errors.refusal`) with a short reason and what to do instead;
nothing asked is dropped. The scheduled DAG lands its run's logical date, or the inbox date
`batch_date` of a single manual run; the reprocess DAG judges the landed batch `batch_id`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.ops.shown import quoted as shown
from foodtaster.state.lake import BATCH_ID_PATTERN, DATE_PATTERN, check_date


def conf_of(context: dict[str, Any]) -> dict[str, Any]:
    """What the run was asked: its DAG run's conf; without a DAG run (a task called alone), the
    params that hold a value."""
    dag_run = context.get("dag_run")
    conf = getattr(dag_run, "conf", None) if dag_run is not None else None
    if conf is None:
        conf = {key: value for key, value in (context.get("params") or {}).items() if value is not None}
    return dict(conf)


def is_backfill(context: dict[str, Any]) -> bool:
    run_type = getattr(context.get("dag_run"), "run_type", None)
    return str(getattr(run_type, "value", run_type) or "") == "backfill"


def run_day(context: dict[str, Any]) -> str:
    """The run's logical day (the day before it was triggered when it has none): the batch a
    refusal names when the run was asked something it cannot use."""
    start = context.get("logical_date") or context.get("data_interval_start")
    if start is None:
        return (context.get("run_after") or datetime.now(UTC)).astimezone(UTC).date().isoformat()
    return start.astimezone(UTC).date().isoformat()


def check(dataset: str, dag_id: str, conf: dict[str, Any], *, reprocess: bool,
          backfill: bool = False) -> None:
    """Refuse a run asked something it cannot use: raises UsageError saying what and what to do."""
    scheduled, reprocess_dag = f"foodtaster_{dataset}", f"foodtaster_{dataset}_reprocess"
    if reprocess:
        if "batch_date" in conf:
            raise UsageError(
                f"batch_date {shown(conf['batch_date'])}: {dag_id} judges a landed batch again, "
                f"named by batch_id alone; to land the inbox of a date, trigger {scheduled} with "
                "that date as its logical date")
        batch_id = conf.get("batch_id")
        if not batch_id:
            raise UsageError(f"{dag_id} needs batch_id, the landed batch to judge again "
                             "(YYYYMMDD as a daily run lands it)")
        if not isinstance(batch_id, str) or not BATCH_ID_PATTERN.match(batch_id):
            raise UsageError(f"batch_id {shown(batch_id)} is not a batch id: YYYYMMDD as a daily "
                             "run lands it, YYYYMMDDHH as an hourly one does")
    else:
        if conf.get("batch_id"):
            raise UsageError(f"batch_id {shown(conf['batch_id'])}: {dag_id} lands inbox dates; "
                             f"reprocess a landed batch with the DAG {reprocess_dag}")
        if backfill and conf.get("batch_date"):
            raise UsageError(
                f"batch_date {shown(conf['batch_date'])} in a backfill: a backfill lands each "
                "date of its range; create it without batch_date")
        if conf.get("batch_date") is not None:
            inbox_date(conf["batch_date"])
    allowed = {"batch_id"} if reprocess else {"batch_id", "batch_date"}
    unknown = sorted(str(key) for key in conf if key not in allowed)
    if unknown:
        takes = ("batch_id (the landed batch)" if reprocess
                 else "batch_date (an inbox date) or nothing (the run's logical date)")
        raise UsageError(f"{dag_id} does not use {', '.join(shown(key) for key in unknown[:5])}"
                         + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
                         + f": it takes {takes}")


def inbox_date(value: Any) -> str:
    """`batch_date` as a date (YYYY-MM-DD, or the date of a timestamp the API sends)."""
    text = str(value)[:10] if isinstance(value, str) else ""
    if not DATE_PATTERN.match(text):
        raise UsageError(f"batch_date {shown(value)} is not a date: give YYYY-MM-DD, e.g. 2026-11-21")
    try:
        return check_date(text)
    except ValueError:
        raise UsageError(f"batch_date {shown(value)} is not a calendar day") from None
