"""docker-compose.yaml, checked by a real compose implementation (Debian's `docker-compose`
validates and resolves the file without a container engine), then read back resolved."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.environment import PROJECT_ROOT, need

from foodtaster_airflow.channels import smtp_settings
from foodtaster_airflow.rest import AirflowApi

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yaml"
AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
                    "airflow-triggerer")
SPARK_WORKERS = ("spark-worker-1", "spark-worker-2")
LAKE_MOUNT = "/opt/foodtaster/data"


def compose(*args: str, file: Path = COMPOSE_FILE) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    need(binary is not None, "docker-compose is not installed (make compose-tools installs it)")
    return subprocess.run(
        [binary, "-f", str(file), *args], capture_output=True, text=True, timeout=120,
        cwd=file.parent, env={"PATH": "/usr/bin:/bin", "HOME": str(file.parent)},
    )


@pytest.fixture(scope="module")
def resolved() -> dict:
    done = compose("config")
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_compose_file_is_valid():
    done = compose("config", "-q")
    assert done.returncode == 0, done.stderr


def test_the_validator_rejects_a_broken_file(tmp_path):
    broken = tmp_path / "docker-compose.yaml"
    text = COMPOSE_FILE.read_text().replace("    command: [\"airflow\", \"scheduler\"]",
                                            "    command: [\"airflow\", \"scheduler\"]\n"
                                            "    no_such_option: true", 1)
    assert "no_such_option" in text
    broken.write_text(text)
    done = compose("config", "-q", file=broken)
    assert done.returncode != 0
    assert "no_such_option" in done.stderr


def test_the_stack_has_airflow_on_postgres_spark_and_a_mail_catcher(resolved):
    services = resolved["services"]
    expected = {"postgres", "airflow-init", *AIRFLOW_SERVICES, "spark-master", *SPARK_WORKERS,
                "mailpit"}
    assert expected <= set(services)
    for name in ("airflow-init", *AIRFLOW_SERVICES):
        env = services[name]["environment"]
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
        assert "@postgres:5432/" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == (
            "http://airflow-apiserver:8080/execution/"
        )
    for name in AIRFLOW_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["airflow-init"]["condition"] == "service_completed_successfully"
        assert depends["postgres"]["condition"] == "service_healthy"
    assert services["airflow-init"]["command"] == ["airflow", "db", "migrate"]
    published = {port["published"] for s in services.values() for port in s.get("ports", [])}
    assert {8080, 8081, 8025} <= {int(p) for p in published}


def _binds(volumes: list) -> list[str]:
    """A service's bind mounts as `source:target`, whichever form compose resolved them to."""
    binds = [v for v in volumes if isinstance(v, str) and v.startswith("/")]
    return binds + [f"{v['source']}:{v['target']}" for v in volumes
                    if isinstance(v, dict) and v.get("type") == "bind"]


def test_the_repo_is_mounted_and_every_mount_exists(resolved):
    for name in (*AIRFLOW_SERVICES, *SPARK_WORKERS):
        binds = _binds(resolved["services"][name]["volumes"])
        targets = {bind.split(":")[1] for bind in binds}
        assert {"/opt/foodtaster/dags", "/opt/foodtaster/foodtaster", "/opt/foodtaster/spark_jobs",
                "/opt/foodtaster/pipeline.yaml", LAKE_MOUNT} <= targets, name
        for bind in binds:
            source = Path(bind.split(":")[0])
            assert source.is_relative_to(PROJECT_ROOT), bind
            if source != PROJECT_ROOT / "data":
                assert source.exists(), f"{name} mounts {source}, which does not exist"
    build = resolved["services"]["airflow-scheduler"]["build"]
    assert (Path(build["context"]) / build["dockerfile"]).is_file()


def test_connections_are_preset_and_parse_as_airflow_connections(resolved):
    from airflow.models.connection import Connection

    env = resolved["services"]["airflow-scheduler"]["environment"]
    spark = Connection(conn_id="spark_default", uri=env["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert (spark.conn_type, spark.host, spark.port) == ("spark", "spark-master", 7077)
    assert spark.extra_dejson["deploy-mode"] == "client"
    smtp = smtp_settings(Connection(conn_id="smtp_default", uri=env["AIRFLOW_CONN_SMTP_DEFAULT"]))
    assert (smtp["host"], smtp["port"], smtp["starttls"]) == ("mailpit", 1025, False)
    assert smtp["sender"] == "foodtaster@example.com"
    api = AirflowApi.from_connection(
        Connection(conn_id="airflow_api", uri=env["AIRFLOW_CONN_AIRFLOW_API"])
    )
    assert api.base_url == "http://airflow-apiserver:8080"
    passwords = json.loads((PROJECT_ROOT / "docker/simple_auth_manager_passwords.json").read_text())
    assert api.username in passwords and api.password == passwords[api.username]
    # the mail catcher listens where the SMTP connection sends
    assert resolved["services"]["mailpit"]["image"].startswith("axllent/mailpit")


def test_a_jetstream_broker_keeps_its_streams_in_a_volume(resolved):
    nats = resolved["services"]["nats"]
    assert nats["image"].startswith("nats:") and "--jetstream" in nats["command"]
    assert any(str(v).startswith("nats-data:/data") or (isinstance(v, dict) and v.get("target") == "/data")
               for v in nats["volumes"])
    assert "4222" in str(nats["ports"])


def test_spark_workers_join_the_master_and_share_the_lake(resolved):
    services = resolved["services"]
    assert "org.apache.spark.deploy.master.Master" in services["spark-master"]["command"]
    assert "--port 7077" in services["spark-master"]["command"]
    for name in SPARK_WORKERS:
        assert "spark://spark-master:7077" in services[name]["command"]
    scheduler_env = services["airflow-scheduler"]["environment"]
    assert scheduler_env["FOODTASTER_LAKE"].startswith(LAKE_MOUNT)
    assert "spark.driver.host=airflow-scheduler" in scheduler_env["FOODTASTER_SPARK_CONF"]
    assert services["airflow-scheduler"]["hostname"] == "airflow-scheduler"


def test_the_tables_catalog_is_on_the_stacks_postgres_and_its_warehouse_in_the_shared_lake(resolved):
    services = resolved["services"]
    (init,) = [bind for bind in _binds(services["postgres"]["volumes"])
               if bind.split(":")[1].startswith("/docker-entrypoint-initdb.d/")]
    assert "CREATE DATABASE foodtaster_catalog" in Path(init.split(":")[0]).read_text()
    for name in AIRFLOW_SERVICES:
        env = services[name]["environment"]
        assert env["PYICEBERG_CATALOG__FOODTASTER__TYPE"] == "sql"
        assert env["PYICEBERG_CATALOG__FOODTASTER__URI"] == (
            "postgresql+psycopg2://airflow:airflow@postgres:5432/foodtaster_catalog")
        warehouse = env["PYICEBERG_CATALOG__FOODTASTER__WAREHOUSE"]
        assert warehouse.startswith(f"file://{LAKE_MOUNT}/")  # where every Spark worker reads and writes
    for name in SPARK_WORKERS:
        assert any(bind.split(":")[1] == LAKE_MOUNT for bind in _binds(services[name]["volumes"]))
