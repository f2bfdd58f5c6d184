"""The DAG factory: a dataset of the registry has three DAGs: `foodtaster_<dataset>` (scheduled),
`foodtaster_<dataset>_reprocess` (one landed batch again, the same tasks) and
`foodtaster_<dataset>_redrive`.

Per run (one data interval, the inbox folder `dt=<date>` of its start):

    land -> has_messages -> validate -> read_verdict -> publish ----> ledger -> verdict
                                     \\               \\-> alert ----/
                                      \\-> retry

- land copies the interval's new inbox files to the raw partition (in the reprocess DAG,
  `foodtaster_<dataset>_reprocess`, it finds the landed batch its `batch_id` param names);
- a refusal (`foodtaster.errors.refusal`: a batch id never landed, a rerun of a redriven
  batch, a batch a live run holds, a contract that cannot be read) fails land or validate at
  once, without retries, and is noted on the run (`REFUSED: ...`) and alerted;
- has_messages ends an empty landing there: nothing downstream but the ledger;
- validate is the Spark job (`spark_default`), retried with backoff when it fails on
  infrastructure; poison data never fails it;
- read_verdict reads the batch summary and passes on its verdict (`foodtaster.policy.decide`, run
  once by the job): it decides nothing;
- publish makes the staged valid rows visible and emits the dataset's Asset event;
- alert runs only when the verdict says so; ledger records the batch;
- verdict fails when the batch was held, so a held run is red in the runs list, the grid and
  the DAG list (docs/decisions/017-a-held-batch-fails-its-run.md); a release through the
  redrive DAG clears it, and it ends green. It pauses the DAG after `disable_after` held
  batches in a row: the run's last task, so the pause leaves no task of the run unscheduled;
- retry is the retry pass (`spark_jobs/retry_rows.py`): quarantined rows of retryable
  rules that are due, and held messages of released groups; it runs after validate, and
  also when an empty landing skipped it (a referenced dataset may have landed meanwhile).

Parsing reads only pipeline.yaml: no Spark, pandera or Great Expectations import,
no connection, Variable or network at parse time.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, AssetOrTimeSchedule, CronDataIntervalTimetable, Param, TriggerRule, task

from foodtaster.errors import FoodtasterError, refusal
from foodtaster.ops.redrive import RedrivePlan
from foodtaster.registry import PROJECT_ROOT, DatasetConfig, KafkaSource, RegistryError, load_registry
from foodtaster.state.lake import BATCH_ID_PATTERN
from foodtaster_airflow import alert_step, kafka_wake, ledger_step, lineage, redrive_steps, run_conf, steps
from foodtaster_airflow.spark_submit import RedriveOperator, RetryPassOperator

VALIDATE_JOB = PROJECT_ROOT / "spark_jobs" / "validate_batch.py"
RETRY_JOB = PROJECT_ROOT / "spark_jobs" / "retry_rows.py"
TASK_IDS = ("land", "has_messages", "validate", "read_verdict", "publish", "alert", "ledger", "verdict",
            "retry")
# The tasks that hand a dict to the next ones (XCom) print no Python repr of it in their log:
# Airflow's "Returned value was: {...}" showed the landing's absolute lake paths; each step logs
# what it did in words (lake-relative paths) itself.
UNPRINTED: dict[str, Any] = {"show_return_value_in_logs": False}
# A task's parameter fed by an upstream task: the upstream's XComArg while the DAG is wired, its
# JSON value (or None, when it was skipped) when the task runs; each task reads it into its type.
Upstream = Any
REDRIVE_JOB = PROJECT_ROOT / "spark_jobs" / "redrive.py"
REDRIVE_TASK_IDS = ("plan", "wants_redrive", "redrive", "announce", "release")
DEFAULT_ARGS = {
    "owner": "foodtaster",
    "retries": 1,  # a lake hiccup; every step can run again safely
    "retry_delay": timedelta(seconds=30),
}
VALIDATE_RETRIES: dict[str, Any] = {
    "retries": 3,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": 2.0,
    "max_retry_delay": timedelta(minutes=10),
}


def dag_id_for(dataset: str) -> str:
    return f"foodtaster_{dataset}"


def valid_asset(dataset: str) -> Asset:
    """The dataset's published valid data: downstream DAGs schedule on it.

    Named by its URI: the Assets view's search matches names only, and the URI is the
    name the README, the logs and downstream DAGs use.
    """
    uri = f"foodtaster://valid/{dataset}"
    return Asset(name=uri, uri=uri, group="foodtaster")


def run_params(dataset: str) -> dict[str, Param]:
    """The scheduled DAG's params: none. Airflow's Backfill tab shows every param of a DAG and
    does not pass them on, and a backfill lands each date of its range: a field there would be
    dropped. A manual run lands its logical date (the trigger form's date); the API and the
    CLI may name another inbox date with the conf key `batch_date`, checked by
    `foodtaster_airflow.run_conf` (in a backfill, refused)."""
    return {}


def reprocess_params() -> dict[str, Param]:
    """The reprocess DAG's trigger form: the one landed batch to judge again."""
    return {
        "batch_id": Param(  # no default: the form asks for it before a run is created
            type="string",
            pattern=BATCH_ID_PATTERN.pattern,
            title="Batch id to reprocess",
            description=(
                "Judge one landed batch (its raw partition) again: YYYYMMDD as landed by a "
                "daily run, YYYYMMDDHH by an hourly one. A batch some of whose quarantined rows "
                "were redriven is refused: redrive its remaining rows instead."
            ),
        ),
    }


def _schedule(config: DatasetConfig):
    """The registry's schedule; for a Kafka source that wakes on messages, also its wake-up
    Asset (`kafka_wake`): runs on the schedule, and when messages wait."""
    # Data intervals, not trigger times: the run of 2026-11-20 covers that day and runs
    # after it ends, so it lands `dt=2026-11-20`, as do `dags test <dag> 2026-11-20` and
    # a backfill from that date.
    timetable = CronDataIntervalTimetable(config.schedule, timezone="UTC") if config.schedule else None
    wake = kafka_wake.wake_asset(config)
    if wake is None:
        return timetable
    return [wake] if timetable is None else AssetOrTimeSchedule(timetable=timetable, assets=wake)


def _doc_md(config: DatasetConfig) -> str:
    return (
        f"# Foodtaster: `{config.name}`\n\n"
        f"{config.description}\n\n"
        f"Lands `inbox/{config.name}/dt=<date>/` of each data interval, validates every "
        f"message against `{config.contract}` and the batch against "
        f"`{config.expectation_suite}`, then publishes or holds the batch.\n\n"
        f"| threshold | value |\n|---|---|\n"
        f"| alert at quarantine rate | {config.alert_rate:.2%} |\n"
        f"| hold at quarantine rate | {config.hold_rate:.2%} |\n"
        f"| pause after held batches in a row | {config.disable_after} |\n\n"
        "**Rerun**: clear a run, or backfill a date range (UI, `airflow backfill create`, "
        f"`POST /api/v2/backfills`). **Reprocess one batch**: trigger `{reprocess_dag_id_for(config.name)}` "
        "with its batch id. **Paused by itself?** The dataset was held "
        f"{config.disable_after} times in a row: fix the producer, then unpause the DAG.\n"
    )


def _start_date(config: DatasetConfig) -> pendulum.DateTime:
    """The registry's `start_date` (a date, or a date and time) as the DAGs' start, in UTC."""
    start = pendulum.parse(config.start_date, tz="UTC")
    if not isinstance(start, pendulum.DateTime):  # a time alone or a duration parse too
        raise RegistryError(f"dataset {config.name!r}: start_date {config.start_date!r} is not a date")
    return start


def build_dag(config: DatasetConfig) -> DAG:
    """The scheduled DAG of one dataset: each data interval's inbox, landed and judged.
    Task bodies live in `foodtaster_airflow.steps`, `alert_step` and `ledger_step`."""
    with DAG(
        dag_id=dag_id_for(config.name),
        description=config.description or f"Foodtaster pipeline of {config.name}",
        doc_md=_doc_md(config),
        schedule=_schedule(config),
        start_date=_start_date(config),
        catchup=False,
        default_args=DEFAULT_ARGS,
        tags=["foodtaster", config.name],
        params=run_params(config.name),
    ) as dag:
        _pipeline(config, dag, reprocess=False)
    return dag


def build_reprocess_dag(config: DatasetConfig) -> DAG:
    """`foodtaster_<dataset>_reprocess`: one landed batch judged again, the same tasks as the
    scheduled DAG. Its own DAG, without a schedule, because Airflow's Backfill tab shows every
    param of a DAG (only a `const` one is hidden, from the trigger form too) and is offered for
    every DAG with a time-based schedule: a batch id there would reprocess one batch for each
    date of the range."""
    dataset = config.name
    with _unscheduled_dag(
        config, reprocess_dag_id_for(dataset), "reprocess", reprocess_params(),
        description=f"Reprocess one landed {dataset} batch",
        doc_md=(f"# Foodtaster: reprocess `{dataset}`\n\nJudge one landed batch again (trigger "
                "with its batch id): the same tasks as the scheduled DAG, on its raw partition. "
                "A batch some of whose quarantined rows were redriven is refused at once: redrive "
                f"its remaining rows with `{redrive_dag_id_for(dataset)}` instead."),
    ) as dag:
        _pipeline(config, dag, reprocess=True)
    return dag


def _unscheduled_dag(config: DatasetConfig, dag_id: str, tag: str, params: dict[str, Param], *,
                     description: str, doc_md: str) -> DAG:
    """A DAG of the dataset run from its trigger form only (no schedule, so no Backfill tab)."""
    return DAG(
        dag_id=dag_id, description=description, doc_md=doc_md, schedule=None,
        start_date=_start_date(config), catchup=False,
        default_args=DEFAULT_ARGS, tags=["foodtaster", config.name, tag], params=params,
    )


def _pipeline(config: DatasetConfig, dag: DAG, *, reprocess: bool) -> None:
    """The tasks of a run, in `dag`: of a data interval's inbox, or (`reprocess`) of the landed
    batch its `batch_id` param names."""
    dataset = config.name
    asset = valid_asset(dataset)

    # One landing of the dataset at a time, across all its runs: landing reads, updates and
    # writes the interval's bookmark, and a manual run for a date (`batch_date`) can overlap
    # that date's scheduled run. Landing is file copies; validation still runs in parallel.
    @task(task_id="land", max_active_tis_per_dag=1, **UNPRINTED)
    def land(**context) -> dict:
        params, conf = context["params"], run_conf.conf_of(context)
        batch_id = conf.get("batch_id") if reprocess else None
        date = run_conf.run_day(context)
        try:
            run_conf.check(dataset, dag.dag_id, conf, reprocess=reprocess,
                           backfill=run_conf.is_backfill(context))
            date, hour = steps.run_interval(context, params, config.schedule)
            landed = steps.land(dataset, date, hour, batch_id, woken_at=steps.woken_at(context))
        except FoodtasterError as err:
            if not refusal(err):
                raise
            # Filed under this run, which landed nothing: a batch id its conf names is another
            # run's batch (often one that published fine), and the reason names it already.
            alert_step.refuse(dataset, None, None if reprocess else date, "land", str(err),
                              dag.dag_id, context["run_id"])
        ledger_step.note_run(dataset, landed["batch_id"], dag.dag_id, context["run_id"],
                       ledger_step.landing_note(landed))
        return landed

    @task.short_circuit(task_id="has_messages", ignore_downstream_trigger_rules=False)
    def has_messages(landed: Upstream) -> bool:
        return steps.has_messages(landed)

    @task(task_id="read_verdict", **UNPRINTED)
    def read_verdict(landed: Upstream) -> dict:
        return steps.read_verdict(dataset, landed)

    def publish(decision: Upstream, **context) -> dict:
        return steps.publish(dataset, decision, context["outlet_events"][asset])

    @task(task_id="alert", retries=2, retry_delay=timedelta(seconds=20), **UNPRINTED)
    def alert(decision: Upstream) -> dict:
        return alert_step.alert(dataset, decision)

    # A skipped task's XComArg reads as None: an empty landing has no decision, a held batch
    # no publication, a quiet one no alert.
    @task(task_id="ledger", trigger_rule=TriggerRule.NONE_FAILED, **UNPRINTED)
    def ledger(landed: Upstream, decision: Upstream, published: Upstream, alerted: Upstream,
               **context) -> dict:
        return ledger_step.ledger(dataset, landed, decision, published, alerted, dag.dag_id,
                                  context["run_id"])

    # No retry: a held batch stays held until a person acts; a retry would only say it again.
    @task(task_id=ledger_step.VERDICT_TASK, retries=0, **UNPRINTED, doc_md=(
        "Red when the batch was held (not published): its log says why and what to do. "
        "Skipped for an empty landing. Cleared by a release through the redrive DAG, it ends green."))
    def verdict(recorded: Upstream, **context) -> dict:
        return ledger_step.verdict(dataset, recorded, dag.dag_id, context["run_id"], context["ti"].try_number)

    landed = land()
    gate_open = has_messages(landed)
    validate = lineage.ValidateWithLineage(
        task_id="validate",
        application=str(VALIDATE_JOB),
        dataset=dataset,
        landed=landed,
        **VALIDATE_RETRIES,
    )
    decision = read_verdict(landed)
    published = lineage.PublishWithLineage(task_id="publish", python_callable=publish, op_args=[decision],
                                           landed=landed, outlets=[asset], **UNPRINTED)
    alerted = alert(decision)
    recorded = ledger(landed, decision, published.output, alerted)

    gate_open >> validate >> decision
    validate >> _retry_task(dataset, landed)
    if isinstance(config.source, KafkaSource) and config.source.dead_letter_topic:

        # After validate wrote the quarantine; retried while the topic cannot be written (each
        # message is produced once whatever the retries: foodtaster.sources.dead_letters).
        @task(task_id="dead_letters", retries=3, retry_delay=timedelta(seconds=30), **UNPRINTED)
        def dead_letters(landed: Upstream) -> dict:
            return steps.dead_letters(dataset, landed)

        validate >> dead_letters(landed)
    [published, alerted] >> recorded
    verdict(recorded)


def _retry_task(dataset: str, landed: Any) -> RetryPassOperator:
    """The retry pass, submitted like the validation job (same connection, jar, environment)
    when the lake says a row is due or a group is released, else done without Spark.
    One at a time a dataset: two passes at once would both publish a row that became due."""
    return RetryPassOperator(
        task_id="retry", application=str(RETRY_JOB), dataset=dataset, landed=landed,
        trigger_rule=TriggerRule.NONE_FAILED, max_active_tis_per_dag=1, **VALIDATE_RETRIES,
    )


def reprocess_dag_id_for(dataset: str) -> str:
    return f"foodtaster_{dataset}_reprocess"


def redrive_dag_id_for(dataset: str) -> str:
    return f"foodtaster_{dataset}_redrive"


def redrive_params() -> dict[str, Param]:
    """The redrive DAG's trigger form: which quarantined rows to judge again, or a batch to release."""
    def optional(title: str, description: str, **extra) -> Param:
        return Param(None, type=["null", "string"], title=title, description=description, **extra)

    return {
        "date_from": optional("From batch date", "First batch date of the quarantined rows to judge "
                              "again (empty with a release only).", format="date"),
        "date_to": optional("To batch date", "Last batch date, included. Empty: the same as From.",
                            format="date"),
        "rule": optional("Only rule", "Only rows quarantined with a reason of this rule, e.g. "
                         "currency.isin. Empty: every rule."),
        "batch_id": optional("Only batch", "Only the quarantined rows of this batch id.",
                             pattern=BATCH_ID_PATTERN.pattern),
        "message_id": optional("Only message id", "Only the rows with this message_id."),
        "dry_run": Param(True, type="boolean", title="Dry run",
                         description="Judge and count by rule; publish nothing. Untick to publish."),
        "why": optional("Why", "The fix, or why a batch is released: kept in the history and the ledger."),
        "release_batch": optional("Release held batch", "Publish this held batch's staged valid rows "
                                  "(needs Why).", pattern=BATCH_ID_PATTERN.pattern),
    }


def build_redrive_dag(config: DatasetConfig) -> DAG:
    r"""`foodtaster_<dataset>_redrive`: no schedule, run from the trigger form.

        plan -> release -> wants_redrive -> redrive (Spark) -> announce

    plan checks the params; release runs first (or skips), so the redrive's duplicate check
    sees the released rows as published; redrive is `spark_jobs/redrive.py` through the
    validate task's submit operator; announce and release emit the dataset's Asset event
    when rows were published.
    """
    dataset = config.name
    asset = valid_asset(dataset)
    with _unscheduled_dag(
        config, redrive_dag_id_for(dataset), "redrive", redrive_params(),
        description=f"Redrive quarantined {dataset} rows after a fix, or release a held batch",
        doc_md=(f"# Foodtaster: redrive `{dataset}`\n\nJudge quarantined rows of a date range again "
                "against today's contract and poison list and publish those that now pass "
                "(as the batch `redrive-<id>` of the valid table, through its own audit branch), "
                "or release a held batch. Dry run is on by default: read the counts by rule in the redrive "
                "task's log, then trigger again with it off. See docs/operations.md."),
    ) as dag:

        @task(task_id="plan", retries=0, **UNPRINTED)  # a form no retry changes: refused at once, saying why
        def plan(**context) -> dict:
            return redrive_steps.plan_redrive(dataset, context["params"], context["run_id"],
                                              by=redrive_steps.triggering_user(context)).to_json()

        @task.short_circuit(task_id="wants_redrive", ignore_downstream_trigger_rules=False,
                            trigger_rule=TriggerRule.NONE_FAILED)  # after a release, or none
        def wants_redrive(planned: Upstream) -> bool:
            return RedrivePlan.from_json(planned).redrive

        @task(task_id="announce", outlets=[asset], **UNPRINTED)
        def announce(planned: Upstream, **context) -> dict:
            return redrive_steps.announce_redrive(dataset, RedrivePlan.from_json(planned),
                                                  context["outlet_events"][asset], dag.dag_id,
                                                  context["run_id"])

        @task(task_id="release", outlets=[asset], **UNPRINTED)
        def release(planned: Upstream, **context) -> dict:
            return redrive_steps.release(dataset, RedrivePlan.from_json(planned),
                                         context["outlet_events"][asset])

        planned = plan()
        redrive = RedriveOperator(task_id="redrive", application=str(REDRIVE_JOB), dataset=dataset,
                                  planned=planned, **VALIDATE_RETRIES)
        release(planned) >> wants_redrive(planned) >> redrive >> announce(planned)
    return dag


def build_dags(registry: str | Path | None = None) -> dict[str, DAG]:
    """Every dataset's DAGs by dag id: its pipeline, its reprocess and its redrive."""
    dags = {}
    for name, config in load_registry(registry).items():
        dags[dag_id_for(name)] = build_dag(config)
        dags[reprocess_dag_id_for(name)] = build_reprocess_dag(config)
        dags[redrive_dag_id_for(name)] = build_redrive_dag(config)
    return dags
