"""Shared fixtures: one local SparkSession for the whole test session, Airflow's migrated
metadata DBs; and the order `make test` hands modules to its workers in. What tests import
lives in tests/support/."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from support.environment import need

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# py4j logs at INFO while the interpreter shuts down, after pytest closed the streams.
logging.getLogger("py4j").setLevel(logging.WARNING)


# `make test` hands modules to its two workers in collection order (pytest-xdist, --dist loadfile
# --no-loadscope-reorder): the longest go first, so that none of them is started last while the
# other worker idles (serial seconds on the fresh-clone run of 831771e: 818, 413, 205, 141, 115,
# 101, 98). test_dags_test.py holds the redrive DAG's runs too: eight runs, third.
LONGEST_FIRST = (
    "tests/e2e/test_standalone_backfill.py", "tests/e2e/test_demo.py", "tests/e2e/test_dags_test.py",
    "tests/integration/test_worker_deaths.py", "tests/integration/test_kafka_source.py",
    "tests/integration/test_crash_isolation.py", "tests/e2e/test_kafka_dag.py",
    "tests/e2e/test_fault_kills.py", "tests/e2e/test_spark_cluster.py", "tests/e2e/test_engine_demo.py",
    "tests/integration/test_differential.py", "tests/integration/test_nested_job.py",
    "tests/integration/test_differential_nested.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parents[1]
    gone = [module for module in LONGEST_FIRST if not (root / module).is_file()]
    if gone:  # a renamed module would silently lose its place, and the workers their balance
        raise pytest.UsageError(f"tests/conftest.py: LONGEST_FIRST names {gone}, which do not exist")
    rank = {module: place for place, module in enumerate(LONGEST_FIRST)}
    # a stable sort: the other modules, and each module's tests, stay in their collected order
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session", autouse=True)
def airflow_db_cache(tmp_path_factory):
    """One `airflow db migrate` a session: every new SQLite Airflow home copies its DB
    (foodtaster_dev.localenv.LocalAirflow.migrate), also in a demo run as a subprocess."""
    from foodtaster_dev.localenv import DB_CACHE_ENV

    if os.environ.get(DB_CACHE_ENV):
        yield
        return
    os.environ[DB_CACHE_ENV] = str(tmp_path_factory.mktemp("airflow-db"))
    yield
    os.environ.pop(DB_CACHE_ENV, None)


@pytest.fixture(scope="session")
def airflow_postgres_template(tmp_path_factory):
    """A PostgreSQL database `airflow db migrate` migrated once a session: the e2e modules'
    metadata DBs are copies of it (CREATE DATABASE ... TEMPLATE), not a migration each.
    Skips locally, fails under CI, when the machine's PostgreSQL cannot be reached."""
    import psycopg2

    from foodtaster_dev.localenv import (
        LocalAirflow,
        drop_postgres_database,
        postgres_database,
        postgres_settings,
    )

    name = f"foodtaster_airflow_template_{os.getpid()}"
    try:
        url = postgres_database(name, fresh=True)
    except psycopg2.OperationalError as err:
        pg = postgres_settings()
        need(False, f"PostgreSQL at {pg['host']}:{pg['port']} as {pg['user']} unreachable: {err}")
        raise
    try:
        home = tmp_path_factory.mktemp("airflow-pg-template")
        LocalAirflow(home=home, lake=str(home / "no-lake"), db_url=url).airflow("db", "migrate", timeout=600)
        yield name
    finally:
        drop_postgres_database(name)


@pytest.fixture(scope="session")
def spark():
    from foodtaster.engine.spark import JVM_OPTIONS, build_session
    from foodtaster_dev.localenv import CDS_ARCHIVE, with_cds

    session = build_session("foodtaster-tests", master="local[2]", test_mode=True,
                            jvm_options=with_cds(JVM_OPTIONS, CDS_ARCHIVE))
    yield session
    session.stop()

