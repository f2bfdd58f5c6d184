"""The validate task: `spark_jobs/validate_batch.py` through the Spark provider's
SparkSubmitHook, on its public API only (constructor, `submit`, `on_kill`, and the two
members `SparkJobHook` overrides: `get_connection` and `log`).

The Spark job never fails on poison data (a bad message is a quarantined row), so a
failed submission is infrastructure (a lost executor, a busy cluster, a full disk)
and is retried with backoff. Two exits fail at once, since a retry cannot change them:
a usage error (exit code 2: bad arguments), and a refusal (`REFUSED_EXIT_CODE`: a rerun of
a redriven batch, a batch a live run holds, a contract that cannot be read), whose reason,
the job's `REFUSED: ...` line, the validate task notes on the run, alerts, and logs last.

Each line spark-submit prints goes to the task log at its own level, the job's first and
Spark's folded after them (`foodtaster_airflow.spark_output`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, NoReturn

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperator, Connection
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowNotFoundException

from foodtaster.errors import REFUSED_EXIT_CODE
from foodtaster.landing import LandingResult
from foodtaster.state.lake import Lake
from foodtaster_airflow.spark_output import SparkOutputLog

DEFAULT_MASTER = "local[*]"
log = logging.getLogger(__name__)
USAGE_ERROR = 2  # argparse's exit code: the job was called wrongly, retrying will not help
SPARK_CONF_ENV = "FOODTASTER_SPARK_CONF"  # extra --conf pairs for this deployment: "k=v,k=v"
PASSED_ENV = ("FOODTASTER_LAKE", "FOODTASTER_REGISTRY", "JAVA_HOME")


def job_name(dataset: str) -> str:
    """The validation job's Spark application name, as the cluster's UI lists it."""
    return f"foodtaster-validate-{dataset}"


def job_arguments(dataset: str, landed: LandingResult | None = None, run_id: str | None = None) -> list[str]:
    """The job's command line for the land task's result (`landed`, known when the task runs):
    without one, only what the DAG knows when it is parsed."""
    batch = [] if landed is None else [
        "--input", landed.raw_path,
        "--batch-id", landed.batch_id,
        "--lake", landed.lake,
        "--batch-date", landed.batch_date,
    ]
    return [
        "--dataset", dataset,
        *batch,
        *(["--run-id", run_id] if run_id else []),  # the job makes it a path name; the summary carries it on
        "--no-publish",  # the publish task publishes, after the gate
    ]


def retry_arguments(dataset: str, lake: str, run_id: str) -> list[str]:
    """The retry pass's command line: it takes no batch, it judges the rows that are due."""
    return ["--dataset", dataset, "--lake", lake, "--run-id", run_id]


def parse_conf(text: str | None) -> dict[str, str]:
    """`spark.a=1, spark.b=x` -> {"spark.a": "1", "spark.b": "x"}."""
    pairs = [part.strip() for part in (text or "").replace("\n", ",").split(",") if part.strip()]
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{SPARK_CONF_ENV}: {pair!r} is not key=value")
        conf[key.strip()] = value.strip()
    return conf


def submit_conf(python: str, deployment: str | None, task: dict[str, str] | None = None) -> dict[str, str]:
    """The --conf of a job's spark-submit: `python` for the Python workers, the engine's `engine_conf`,
    the `deployment`'s pairs (FOODTASTER_SPARK_CONF's text), the task's own, then the parser jar.
    scripts/cds_archive.py trains the class-data-sharing archive on this same conf."""
    from foodtaster.engine.spark import engine_conf, parser_jar

    conf = {"spark.pyspark.python": python, **engine_conf(), **parse_conf(deployment), **(task or {})}
    # The strict line parser goes to the driver and every executor with the job.
    conf["spark.jars"] = ",".join(filter(None, [parser_jar(), conf.get("spark.jars")]))
    return conf


def job_environment() -> dict[str, str]:
    """What spark-submit and its Python workers need: this interpreter (it has pandera
    and the contracts) and the deployment's lake and registry."""
    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    env = {
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": os.environ.get("PYSPARK_DRIVER_PYTHON") or python,
    }
    env.update({name: os.environ[name] for name in PASSED_ENV if os.environ.get(name)})
    return env


class SparkJobHook(SparkSubmitHook):
    """The provider's SparkSubmitHook with two of its public members our own:

    - `get_connection`: a missing connection is `local[*]` (the provider alone would
      fall back to yarn);
    - `log`: a `SparkOutputLog`, so each line spark-submit prints goes out at its own level.
    """

    @classmethod
    def get_connection(cls, conn_id: str) -> Connection:
        try:
            return super().get_connection(conn_id)
        except AirflowNotFoundException:
            log.info("connection %s is not defined: running on %s", conn_id, DEFAULT_MASTER)
            return Connection(conn_id=conn_id, conn_type="spark", host=DEFAULT_MASTER)

    @cached_property
    def log(self) -> SparkOutputLog:  # type: ignore[override]
        return SparkOutputLog(super().log)


class ValidateBatchOperator(BaseOperator):
    """The validation job of one dataset (or, given `arguments`, another job of it) through the
    provider's SparkSubmitHook: its constructor, `submit` and `on_kill`.

    `spark_default` picks the cluster (`local[*]`, `spark://host:7077`, `yarn`,
    `k8s://https://host:443`); without that connection the job runs on `local[*]`.
    """

    template_fields: Sequence[str] = ("application", "conf", "application_args", "env_vars", "name",
                                      "landed")

    def __init__(self, *, dataset: str, application: str, conn_id: str = "spark_default",
                 arguments: list[str] | None = None, conf: dict[str, str] | None = None,
                 env_vars: dict[str, str] | None = None, name: str | None = None,
                 landed: Any = None, **kwargs: Any) -> None:
        """`arguments`: another job's command line (the redrive's); default the validation job's
        of `landed`, the land task's result (its XComArg, resolved to its JSON form when the task
        runs), whose refusal is noted on the run and alerted as its landed batch's."""
        super().__init__(**kwargs)
        self.validates_landed_batch = arguments is None
        self.landed = landed
        self.dataset = dataset
        self.application = application
        self.conn_id = conn_id
        self.application_args = arguments or job_arguments(dataset)
        self.conf = conf
        self.env_vars = env_vars
        self.name = name or job_name(dataset)
        self.submission: SparkJobHook | None = None  # the spark-submit running now, for on_kill

    def spark_hook(self) -> SparkJobHook:
        """The hook that submits the job as this operator is set up now."""
        return SparkJobHook(conf=self.conf, conn_id=self.conn_id, name=self.name,
                            application_args=self.application_args, env_vars=self.env_vars)

    def landing(self) -> LandingResult | None:
        """The land task's result, once the task runs (None for an operator built without one)."""
        return LandingResult.from_dict(self.landed) if isinstance(self.landed, dict) else None

    def execute(self, context: Any) -> dict[str, Any] | None:  # None: no XCom (a subclass may push one)
        landed = self.landing()
        if self.validates_landed_batch and landed is not None:
            self.application_args = job_arguments(self.dataset, landed, context["run_id"])
        env = job_environment()
        self.conf = submit_conf(env["PYSPARK_PYTHON"], os.environ.get(SPARK_CONF_ENV), self.conf)
        self.env_vars = {**env, **(self.env_vars or {})}
        self.submission = self.spark_hook()
        self.check_spark_binary(self.submission)
        try:
            try:
                self.submission.submit(self.application)
            finally:  # Spark's lines, folded, after the job's and before a failure's own
                self.submission.log.flush()
        except AirflowException as err:
            exit_code = submit_exit_code(err)
            if exit_code == REFUSED_EXIT_CODE:
                self.refuse(context, self.submission.log.refusal or str(err))
            if exit_code == USAGE_ERROR:
                raise AirflowFailException(
                    f"the Spark job rejected its arguments (exit code {USAGE_ERROR}); "
                    f"not retrying: {err}"
                ) from err
            raise
        return None

    def check_spark_binary(self, hook: SparkJobHook) -> None:
        """Fail at once, saying what to do, when the spark-submit the hook would start is not
        there: the provider's FileNotFoundError was retried, each retry logging "No tasks to run"."""
        binary = hook.spark_binary or "spark-submit"  # the connection's extra, resolved by the hook
        path = (self.env_vars or {}).get("PATH") or os.environ.get("PATH", "")
        if shutil.which(binary, path=path) is None:
            raise AirflowFailException(
                f"{binary} is not on PATH ({path}): install pyspark into the environment Airflow runs "
                "in (its bin/ holds spark-submit) or put Spark's bin/ on PATH, or name the binary in "
                "the spark_default connection's extra spark-binary; not retrying")

    def refuse(self, context: Any, reason: str) -> NoReturn:
        """The job refused its run: fail at once, the reason last (`alert_step.refuse` for the
        validation job: noted on the run and alerted as well)."""
        landed = self.landing()
        if self.validates_landed_batch and landed is not None:
            from foodtaster_airflow import alert_step

            alert_step.refuse(self.dataset, landed.batch_id, landed.batch_date, self.task_id, reason,
                         context["ti"].dag_id, context["run_id"])
        log.error("%s", reason)
        raise AirflowFailException(reason)

    def on_kill(self) -> None:
        if self.submission is not None:
            self.submission.on_kill()
            # what Spark said before the kill, as the task's last words: never a new failure here
            held = getattr(self.submission, "log", None)
            if isinstance(held, SparkOutputLog):
                held.flush()


class RedriveOperator(ValidateBatchOperator):
    """The redrive job (`spark_jobs/redrive.py`) of a dataset, its command line the plan task's
    `RedrivePlan` (`planned`: its XComArg, resolved to its JSON form when the task runs)."""

    template_fields: Sequence[str] = (*ValidateBatchOperator.template_fields, "planned")

    def __init__(self, *, dataset: str, planned: Any, **kwargs: Any) -> None:
        kwargs.setdefault("name", f"foodtaster-redrive-{dataset}")
        super().__init__(dataset=dataset, arguments=["--dataset", dataset], **kwargs)
        self.planned = planned

    def execute(self, context: Any) -> dict[str, Any] | None:
        from foodtaster.ops.redrive import RedrivePlan

        self.application_args = RedrivePlan.from_json(self.planned).arguments()
        return super().execute(context)


class RetryPassOperator(ValidateBatchOperator):
    """The retry pass (`spark_jobs/retry_rows.py`) of a dataset: it starts Spark only when
    the lake says the pass has something to do (`retry_work`); a scheduled run with no
    row due and no group to release ends green without a JVM start."""

    def __init__(self, *, dataset: str, landed: Any, **kwargs: Any) -> None:
        kwargs.setdefault("name", f"foodtaster-retry-{dataset}")
        super().__init__(dataset=dataset, arguments=["--dataset", dataset], landed=landed, **kwargs)

    def execute(self, context: Any) -> dict[str, Any] | None:
        from foodtaster.logs import batch_logger

        landed = self.landing()
        if landed is None:
            raise AirflowFailException(f"{self.task_id} runs after a land task: it has no landing")
        lake = landed.lake
        self.application_args = retry_arguments(self.dataset, lake, context["run_id"])
        why = retry_work(self.dataset, lake)
        log = batch_logger(__name__, self.dataset, "-")
        if why is None:
            log.event("retry_skipped", why="no row due and no group to release: no Spark started")
            return {"dataset": self.dataset, "nothing_due": True}
        log.event("retry_started", why=why)
        super().execute(context)
        return None


def retry_work(dataset: str, lake_uri: str) -> str | None:
    """Why the retry pass of `dataset` must run now, or None: then the retry task starts no
    Spark (foodtaster.state.retries reads the lake with pyarrow) and imports no engine module.
    (pandera itself imports pyspark.pandas when pyspark is installed: that import stays.)"""
    from foodtaster.contract_references import read_references, retryable
    from foodtaster.registry import get_dataset
    from foodtaster.state.retries import retry_work as due_work

    config = get_dataset(dataset)
    policies = retryable(read_references(config.load_contract()))
    conversation = config.conversation
    return due_work(Lake(lake_uri), dataset, policies, conversation.group_by if conversation else (),
                    datetime.now(UTC))


# SparkSubmitHook.submit's failure names spark-submit's exit code, its only public trace:
# "Cannot execute: <command>. Error code is: 2." (tests/unit/test_airflow_glue.py runs a real
# spark-submit against it, so a provider that words it otherwise fails there, not in a run).
SUBMIT_EXIT_CODE = re.compile(r"\. Error code is: (-?\d+)\.")


def submit_exit_code(err: Exception) -> int | None:
    """spark-submit's exit code in the hook's failure, None when the failure is not its exit."""
    match = SUBMIT_EXIT_CODE.search(str(err))
    return int(match.group(1)) if match else None
