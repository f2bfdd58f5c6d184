"""The validate task on a Spark standalone cluster: a master and a worker started with
`spark-class` from the pyspark package on 127.0.0.1, `spark_default` pointed at
spark://127.0.0.1:<port>; the partitions equal those of the same batch in local mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from support.e2e import ALERTING, DAG_ID, DATASET, fill_inbox
from support.lake import batch_rows, row_count

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state.lake import Lake, read_json
from foodtaster.state.tables import QUARANTINE, VALID, audit_branch
from foodtaster_dev.localenv import (
    CDS_ARCHIVE,
    VENV_BIN,
    LocalAirflow,
    free_port,
    small_spark_conf,
    start_group,
    stop_group,
    with_cds,
)

pytestmark = pytest.mark.slow
DATE, BATCH_ID = "2026-11-25", "20261125"


def wait_for_workers(ui: str, count: int, process: subprocess.Popen, log: Path) -> dict:
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            state = requests.get(f"{ui}/json/", timeout=5).json()
            if sum(w["state"] == "ALIVE" for w in state.get("workers", [])) >= count:
                return state
        except (requests.RequestException, ValueError):
            pass
        time.sleep(1)
    raise AssertionError(f"no {count} alive worker at {ui}\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Spark master and one worker, each in its own process group, stopped after."""
    home = tmp_path_factory.mktemp("spark")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    # The master's and worker's JVMs have spark-submit's class path: they map the archive too
    # (their start to a registered worker: 7.7-9.3 -> 5.3-5.8 s of CPU).
    daemon_options = with_cds(os.environ.get("SPARK_DAEMON_JAVA_OPTS", ""), CDS_ARCHIVE)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(home),
           "SPARK_DAEMON_JAVA_OPTS": daemon_options,
           "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    spark_class = str(VENV_BIN / "spark-class")
    master = worker = None
    try:
        master = start_group(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(ui_port)], env, home / "master.log")
        worker = start_group(
            [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
             "--host", "127.0.0.1", "--cores", "2", "--memory", "2g",
             "--webui-port", str(worker_ui), "--work-dir", str(home / "work")],
            env, home / "worker.log")
        ui = f"http://127.0.0.1:{ui_port}"
        wait_for_workers(ui, 1, master, home / "worker.log")
        yield {"master": f"spark://127.0.0.1:{port}", "port": port, "ui": ui, "home": home}
    finally:
        stop_group(worker)
        stop_group(master)


def table_rows(lake: Lake, zone: str, ref: str = "main",
               sort_keys: tuple[str, ...] = ("_source_file", "_line_number")):
    """Every row of the batch in a table on `ref` but the wall-clock `_ingested_at`, in a stable order."""
    table = batch_rows(lake, DATASET, zone, BATCH_ID, ref)
    assert table is not None, f"no {zone} row of {BATCH_ID} on {ref}"
    table = table.drop_columns([c for c in ("_ingested_at",) if c in table.column_names])
    return sorted(table.to_pylist(), key=lambda row: tuple(row[k] for k in sort_keys))


def test_validate_on_a_standalone_cluster_gives_the_local_partitions(cluster, tmp_path_factory):
    lake = str(tmp_path_factory.mktemp("lake"))
    generated = fill_inbox(lake, DATE, seed=25, **ALERTING)
    af = LocalAirflow(
        home=tmp_path_factory.mktemp("airflow"), lake=lake,
        connections={"spark_default": {"conn_type": "spark", "host": "spark://127.0.0.1",
                                       "port": cluster["port"]}},
        extra_env={"FOODTASTER_SPARK_CONF": small_spark_conf() + ",spark.driver.host=127.0.0.1,"
                   "spark.cores.max=2,spark.executor.memory=1g"},
    )
    af.migrate()
    log = tmp_path_factory.mktemp("logs") / "run.log"
    run = af.dags_test(DAG_ID, DATE, log=log)
    assert run["state"] == "success", log.read_text()[-5000:]
    assert run["tasks"]["validate"] == "success" and run["tasks"]["publish"] == "success"
    text = log.read_text()
    assert f"--master spark://127.0.0.1:{cluster['port']}" in text

    # the master ran the job: a finished application of this DAG's validate task
    apps = requests.get(f"{cluster['ui']}/json/", timeout=10).json()["completedapps"]
    assert any(app["name"].startswith(f"foodtaster-{DATASET}-{BATCH_ID}") or
               app["name"] == "foodtaster-validate-orders" for app in apps), apps

    # the same raw batch in local mode, into another lake
    local_lake = str(tmp_path_factory.mktemp("local-lake"))
    the_lake, local = Lake(lake), Lake(local_lake)
    done = subprocess.run(
        [str(VENV_BIN / "spark-submit"), "--master", "local[2]",
         *[arg for pair in small_spark_conf().split(",") for arg in ("--conf", pair)],
         str(PROJECT_ROOT / "spark_jobs" / "validate_batch.py"), "--dataset", DATASET,
         "--input", the_lake.raw(DATASET, DATE, BATCH_ID), "--batch-id", BATCH_ID,
         "--lake", local_lake, "--batch-date", DATE, "--no-publish"],
        env=af.env(), capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the entrypoint under spark-submit: its summary printed last and written, every message
    # counted, the valid rows on the batch's audit branch for the pipeline's gate, none on main
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    summary = read_json(local.summary(DATASET, BATCH_ID))
    assert printed["messages"] == summary["messages"] == generated.messages
    assert summary["valid"] == generated.counts()["valid"]
    assert printed["published"] is False  # --no-publish
    assert row_count(local, DATASET, VALID, BATCH_ID, ref=audit_branch(BATCH_ID)) == summary["valid"]
    assert row_count(local, DATASET, VALID, BATCH_ID) == 0

    if CDS_ARCHIVE.is_file():  # the master, the worker and the executors it started mapped it
        logs = [cluster["home"] / "master.log", cluster["home"] / "worker.log",
                *(cluster["home"] / "work").glob("*/*/std*")]
        assert len(logs) > 2 and not [log for log in logs if "Unable to use shared archive"
                                      in log.read_text(errors="replace")], logs

    cluster_valid = table_rows(the_lake, VALID)
    local_valid = table_rows(local, VALID, ref=audit_branch(BATCH_ID))  # --no-publish: on its branch
    assert len(cluster_valid) > 0 and cluster_valid == local_valid
    cluster_quarantine = table_rows(the_lake, QUARANTINE)
    local_quarantine = table_rows(local, QUARANTINE)
    assert len(cluster_quarantine) > 0 and cluster_quarantine == local_quarantine
