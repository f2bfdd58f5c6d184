"""The same DAG run with Airflow's metadata database on PostgreSQL (127.0.0.1:5432, user
postgres), as production runs it. The test creates its own database (a copy of the session's
migrated one) and drops it after."""

from __future__ import annotations

import pytest
from support.e2e import ALERTING, DAG_ID, DATASET, VALID_URI, asset_events, fill_inbox, metadata_database
from support.lake import row_count

from foodtaster.state import ledger
from foodtaster.state.lake import Lake, exists
from foodtaster.state.tables import QUARANTINE, VALID
from foodtaster_dev.localenv import LocalAirflow, drop_postgres_database

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def database(airflow_postgres_template):
    url = metadata_database("foodtaster_airflow_e2e_pg", airflow_postgres_template)
    yield url
    drop_postgres_database(url.rsplit("/", 1)[1])


def test_the_dag_runs_with_its_metadata_on_postgres(tmp_path_factory, database):
    import psycopg2

    lake = str(tmp_path_factory.mktemp("lake"))
    af = LocalAirflow(home=tmp_path_factory.mktemp("airflow"), lake=lake, db_url=database)  # migrated
    date, batch_id = "2026-11-24", "20261124"
    expected = fill_inbox(lake, date, seed=24, **ALERTING).counts()
    log = tmp_path_factory.mktemp("logs") / "run.log"

    run = af.dags_test(DAG_ID, date, log=log)

    assert run["state"] == "success", log.read_text()[-5000:]
    assert run["tasks"]["publish"] == "success" and run["tasks"]["alert"] == "success"
    the_lake = Lake(lake)
    assert row_count(the_lake, DATASET, VALID, batch_id) == expected["valid"]
    assert row_count(the_lake, DATASET, QUARANTINE, batch_id) == expected["quarantined"]
    (entry,) = ledger.batch_entries(the_lake, DATASET)
    assert entry["verdict"] == "published" and entry["batch_id"] == batch_id
    # no SMTP or Slack connection here: the alert is a file under the lake
    assert exists(entry["alert_file"])
    (event,) = asset_events(af, VALID_URI)
    assert event["extra"]["valid"] == expected["valid"]

    # and the run really is in PostgreSQL
    with psycopg2.connect(database.replace("postgresql+psycopg2", "postgresql")) as conn, \
            conn.cursor() as cur:
        cur.execute("SELECT state FROM dag_run WHERE dag_id = %s", (DAG_ID,))
        assert cur.fetchall() == [("success",)]
        cur.execute("SELECT task_id, state FROM task_instance WHERE dag_id = %s", (DAG_ID,))
        assert dict(cur.fetchall())["validate"] == "success"
