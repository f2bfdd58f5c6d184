"""Task callables of the redrive DAG (`foodtaster_<dataset>_redrive`, built by
`foodtaster_airflow.factory`): check the trigger form, release a held batch, announce what a
redrive published. Thin: each calls into the packages.
"""

from __future__ import annotations

import logging
from typing import Any

from foodtaster.ops.redrive import RedrivePlan
from foodtaster.state.lake import Lake, check_batch_id, check_date
from foodtaster_airflow.ledger_step import note_run, show_release
from foodtaster_airflow.steps import PipelineError, lake_from_env

log = logging.getLogger(__name__)


def triggering_user(context: dict[str, Any]) -> str:
    """Who asked for the run, as the ledger and the pages name a release's or redrive's author:
    the user Airflow records on the run (`triggering_user_name`, Airflow 3.1+); `airflow dags
    test` records `dag_test`, then the system user who ran it."""
    import getpass

    user = getattr(context.get("dag_run"), "triggering_user_name", None)
    if user == "dag_test":
        return f"{getpass.getuser()} (airflow dags test)"
    return str(user) if user else f"Airflow run {context.get('run_id')}"


def plan_redrive(dataset: str, params: dict[str, Any], run_id: str, by: str | None = None) -> RedrivePlan:
    """Check the redrive DAG's params before Spark starts; what the redrive and release tasks do.
    A form that cannot be run raises UsageError: the task fails at once, saying why."""
    from foodtaster.errors import UsageError
    from foodtaster.ops.shown import quoted
    from foodtaster.state.lake import run_id_from

    def day(name: str, value: str) -> str:
        try:
            return check_date(value[:10])
        except ValueError:
            raise UsageError(f"{name} {quoted(value)} is not a date: give YYYY-MM-DD") from None

    def given(name: str) -> str | None:
        value = params.get(name)
        return str(value).strip() or None if value is not None else None

    date_from, date_to = given("date_from"), given("date_to") or given("date_from")
    release_batch, why = given("release_batch"), given("why") or ""
    batch_id = given("batch_id")
    if not date_from and not release_batch:
        raise UsageError("give From batch date (to redrive) or Release held batch (to release), or both")
    if release_batch and not why:
        raise UsageError("a release needs Why: the ledger records who released a held batch and why")
    for name, value in (("Only batch", batch_id), ("Release held batch", release_batch)):
        if value:
            try:
                check_batch_id(value)
            except ValueError:
                raise UsageError(f"{name} {quoted(value)} is not a batch id: YYYYMMDD as a daily "
                                 "run lands it") from None
    # date_to is date_from when not given
    if date_from and date_to and day("From batch date", date_from) > day("To batch date", date_to):
        raise UsageError(f"From {date_from[:10]} is after To {date_to[:10]}")
    return RedrivePlan(
        dataset=dataset, lake=lake_from_env().root, redrive=bool(date_from), release=release_batch,
        date_from=date_from[:10] if date_from else None, date_to=date_to[:10] if date_to else None,
        rule=given("rule"), batch_id=batch_id, message_id=given("message_id"),
        dry_run=bool(params.get("dry_run", True)), why=why, redrive_id=run_id_from(run_id)[:56],
        by=(by or f"Airflow run {run_id}")[:200],
    )


def announce_redrive(dataset: str, planned: RedrivePlan, outlet_event: Any, dag_id: str,
                     run_id: str) -> dict[str, Any]:
    """After the redrive job: its report in the log, its first line as the run's note (a dry
    run's too: what would move is what a person triggered it for), and the Asset event when
    rows were published."""
    from airflow.sdk.exceptions import AirflowSkipException

    from foodtaster.ops.redrive import describe
    from foodtaster.state.lake import exists, read_json

    lake = Lake(planned.lake)
    uri = lake.report(dataset, "redrive-" + planned.redrive_id) + "/redrive.json"
    if not exists(uri):
        raise PipelineError(f"the redrive job wrote no report at {uri}")
    report = read_json(uri)
    described = describe(report)
    log.info("dataset=%s batch=%s event=redrive_report\n%s", dataset, report["batch_id"], described)
    note_run(dataset, report["batch_id"], dag_id, run_id, described.splitlines()[0])
    if report["dry_run"] or not report["published"]:
        raise AirflowSkipException("dry run: nothing published" if report["dry_run"] else "no row passed")
    extra = {"dataset": dataset, "batch_id": report["batch_id"], "redrive": True,
             "paths": report["published"], **report["counts"]}
    outlet_event.extra = extra
    return extra


def release(dataset: str, planned: RedrivePlan, outlet_event: Any) -> dict[str, Any]:
    """Publish a held batch's staged valid rows (`foodtaster.state.release`), with the Asset event."""
    from airflow.sdk.exceptions import AirflowSkipException

    from foodtaster.state.release import release_batch

    if not planned.release:
        raise AirflowSkipException("no batch to release")
    done = release_batch(Lake(planned.lake), dataset, planned.release, planned.why, planned.by)
    outlet_event.extra = {"dataset": dataset, "batch_id": done["batch_id"], "batch_date": done["batch_date"],
                          "table": done["table"], "snapshot_id": done["snapshot_id"], "tag": done["tag"],
                          "valid": done["valid"], "released": done["released"]}
    log.info("dataset=%s batch=%s event=released table=%s tag=%s by=%s why=%s", dataset, done["batch_id"],
             done["table"], done["tag"], planned.by, planned.why)
    return {**outlet_event.extra, "held_run": show_release(dataset, done["batch_id"])}
