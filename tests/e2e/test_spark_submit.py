"""The entrypoint under real `spark-submit`: arguments in, refusals out. A batch judged under
spark-submit, its summary printed and its rows on the audit branch: tests/e2e/test_spark_cluster.py
(the same raw batch as on the cluster, in local mode)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from foodtaster.state.lake import Lake

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def class_data_sharing(monkeypatch):
    """Each spark-submit's JVM (the launcher reads SPARK_SUBMIT_OPTS) maps the class-data-sharing
    archive when built: the 300-message job's process tree, 65.0/80.0 -> 62.6/69.0 s of CPU
    (psutil, load 5-6.5)."""
    from foodtaster_dev.localenv import CDS_ARCHIVE, with_cds

    monkeypatch.setenv("SPARK_SUBMIT_OPTS", with_cds(os.environ.get("SPARK_SUBMIT_OPTS", ""), CDS_ARCHIVE))


def test_bad_arguments_fail_clearly(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "spark_jobs/validate_batch.py"), "--dataset", "orders",
         "--input", str(tmp_path), "--batch-id", "../escape"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "batch id" in done.stderr


def test_the_submit_operator_sends_the_parser_jar_with_the_job(tmp_path, monkeypatch):
    """spark.jars carries the parser to the driver and every executor; a deployment's own jars stay."""
    from airflow.sdk.exceptions import AirflowException

    from foodtaster.engine.spark import parser_jar
    from foodtaster_airflow.spark_submit import SPARK_CONF_ENV, ValidateBatchOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    monkeypatch.setenv(SPARK_CONF_ENV, "spark.jars=/opt/extra.jar")
    app = tmp_path / "app.py"
    app.write_text("import sys\nsys.exit(1)\n")
    operator = ValidateBatchOperator(task_id="validate", application=str(app), dataset="orders")
    with pytest.raises(AirflowException):
        operator.execute({})
    assert operator.conf["spark.jars"] == f"{parser_jar()},/opt/extra.jar"


def test_spark_warnings_reach_the_task_log_as_warnings(tmp_path, monkeypatch, caplog):
    """Under real spark-submit: a log4j WARN from the driver's JVM is a WARNING in the log,
    the job's summary line is on the job's logger, read as a sentence, before Spark's lines."""
    import logging

    from foodtaster_airflow.spark_output import JOB_LOGGER, SPARK_LOGGER
    from foodtaster_airflow.spark_submit import ValidateBatchOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    app = tmp_path / "app.py"
    app.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "jvm = spark.sparkContext._jvm\n"
        "jvm.org.apache.logging.log4j.LogManager.getLogger('probe').warn('probe says careful')\n"
        "spark.stop()\n"
        "print('{\"dataset\": \"orders\", \"batch_id\": \"p1\", \"messages\": 0}')\n"
    )
    caplog.set_level(logging.INFO)
    operator = ValidateBatchOperator(task_id="validate", application=str(app), dataset="orders")
    operator.application_args = []  # the probe takes none
    operator.execute({})
    routed = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert any(name == SPARK_LOGGER and level == "WARNING" and "WARN probe: probe says careful"
               in line for name, level, line in routed), routed[-20:]
    summary = [i for i, (name, level, line) in enumerate(routed) if name == JOB_LOGGER
               and level == "INFO" and line.startswith("summary: orders batch p1: 0 messages = ")]
    spark = [i for i, (name, _, _) in enumerate(routed) if name == SPARK_LOGGER]
    assert summary and spark and summary[0] < spark[0], routed[-20:]
    assert not any(level == "INFO" and " WARN " in line for _, level, line in routed)


def _refused(tmp_path: Path, batch_id: str = "b1", **env: str) -> subprocess.CompletedProcess:
    """The entrypoint, run as Python (a refusal comes before Spark starts), on an empty input."""
    (tmp_path / "in").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(ROOT / "spark_jobs/validate_batch.py"), "--dataset", "orders",
         "--input", str(tmp_path / "in"), "--batch-id", batch_id, "--batch-date", "2026-11-21",
         "--lake", str(tmp_path / "lake"), "--run-id", "second"],
        capture_output=True, text=True, timeout=120, env={**os.environ, **env},
    )


def _last_line(done: subprocess.CompletedProcess) -> str:
    return done.stderr.strip().splitlines()[-1]


def test_a_rerun_of_a_redriven_batch_is_refused_with_what_to_do_instead(tmp_path):
    from foodtaster.errors import REFUSED_EXIT_CODE
    from foodtaster.state.dispositions import REDRIVEN, Dispositions

    Dispositions(Lake(str(tmp_path / "lake")), "orders").record(REDRIVEN, [("b1", "a.jsonl", 3)], by="test")
    done = _refused(tmp_path)
    assert done.returncode == REFUSED_EXIT_CODE, done.stderr[-3000:]
    assert _last_line(done).startswith("REFUSED: orders batch b1: 1 of its quarantined rows were redriven")
    assert "Redrive its remaining quarantined rows instead" in _last_line(done)
    assert "Traceback" not in done.stderr


def test_a_batch_a_live_run_holds_is_refused_naming_that_run(tmp_path):
    from foodtaster.errors import REFUSED_EXIT_CODE
    from foodtaster.state.lease import batch_lease

    with batch_lease(Lake(str(tmp_path / "lake")), "orders", "b1", "first"):  # this live process holds it
        done = _refused(tmp_path)
    assert done.returncode == REFUSED_EXIT_CODE, done.stderr[-3000:]
    assert _last_line(done).startswith("REFUSED: orders batch b1 is held by run first")


def test_a_contract_that_cannot_be_read_is_refused(tmp_path):
    from foodtaster.errors import REFUSED_EXIT_CODE

    registry = tmp_path / "pipeline.yaml"
    registry.write_text((ROOT / "pipeline.yaml").read_text().replace(
        "contracts.orders:Orders", "contracts.orders:Gone"))
    done = _refused(tmp_path, FOODTASTER_REGISTRY=str(registry))
    assert done.returncode == REFUSED_EXIT_CODE, done.stderr[-3000:]
    assert _last_line(done).startswith("REFUSED: dataset 'orders': contract 'contracts.orders:Gone' "
                                       "cannot be imported")
