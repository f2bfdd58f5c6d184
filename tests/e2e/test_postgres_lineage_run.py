"""One run of the orders DAG (`airflow dags test`, the real Spark job) with Airflow's metadata
database on PostgreSQL (127.0.0.1:5432, user postgres), as production runs it, and OpenLineage
through Airflow's provider to a real HTTP receiver on loopback. The run is really in PostgreSQL;
the validate and publish tasks' events carry the DataQualityMetrics and DataQualityAssertions
facets and the batch's verdict, in the batch's own numbers. The module creates its own database
(a copy of the session's migrated one) and drops it after; without PostgreSQL it skips locally
and fails under CI (`airflow_postgres_template`)."""

from __future__ import annotations

import json
import time

import pytest
from support.e2e import ALERTING, DAG_ID, DATASET, VALID_URI, asset_events, fill_inbox, metadata_database
from support.lake import row_count
from support.servers import WebhookSink

from foodtaster.state import ledger
from foodtaster.state.lake import Lake, exists, read_json
from foodtaster.state.tables import QUARANTINE, VALID
from foodtaster_dev.localenv import LocalAirflow, drop_postgres_database

pytestmark = pytest.mark.slow
DATE, BATCH_ID = "2026-11-24", "20261124"


def completes(receiver: WebhookSink, task_id: str) -> list[dict]:
    events = [json.loads(body) for path, _headers, body in receiver.requests if path.endswith("/lineage")]
    return [e for e in events if e.get("eventType") == "COMPLETE"
            and e["job"]["name"] == f"{DAG_ID}.{task_id}"]


@pytest.fixture(scope="module")
def database(airflow_postgres_template):
    url = metadata_database("foodtaster_airflow_e2e_pg", airflow_postgres_template)
    yield url
    drop_postgres_database(url.rsplit("/", 1)[1])


@pytest.fixture(scope="module")
def run(tmp_path_factory, database):
    """The module's one run: the lake, what the run was, what the generator made, and the
    receiver with what it was sent."""
    lake = str(tmp_path_factory.mktemp("lake"))
    expected = fill_inbox(lake, DATE, seed=24, **ALERTING).counts()  # 5% html poison: published, alerted
    log = tmp_path_factory.mktemp("logs") / "run.log"
    with WebhookSink() as receiver:
        af = LocalAirflow(home=tmp_path_factory.mktemp("airflow"), lake=lake, db_url=database,  # migrated
                          extra_env={
                              "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
                                  {"type": "http", "url": receiver.url, "endpoint": "api/v1/lineage"}),
                              "AIRFLOW__OPENLINEAGE__NAMESPACE": "foodtaster-test",
                              "AIRFLOW__OPENLINEAGE__EXECUTION_TIMEOUT": "120"})  # a busy 2-core machine
        dag_run = af.dags_test(DAG_ID, DATE, log=log)
        assert dag_run["state"] == "success", f"{dag_run}\n{log.read_text()[-5000:]}"
        deadline = time.monotonic() + 60  # the provider may send after the task is done
        while time.monotonic() < deadline and not (completes(receiver, "validate")
                                                   and completes(receiver, "publish")):
            time.sleep(1)
    return af, lake, dag_run, expected, receiver


def test_the_dag_runs_with_its_metadata_on_postgres(run, database):
    import psycopg2

    af, lake, dag_run, expected, _receiver = run
    assert dag_run["tasks"]["publish"] == "success" and dag_run["tasks"]["alert"] == "success"
    the_lake = Lake(lake)
    assert row_count(the_lake, DATASET, VALID, BATCH_ID) == expected["valid"]
    assert row_count(the_lake, DATASET, QUARANTINE, BATCH_ID) == expected["quarantined"]
    (entry,) = ledger.batch_entries(the_lake, DATASET)
    assert entry["verdict"] == "published" and entry["batch_id"] == BATCH_ID
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


def test_validate_and_publish_send_the_batch_quality_facets(run):
    _af, lake, _dag_run, _expected, receiver = run
    summary = read_json(Lake(lake).summary("orders", BATCH_ID))
    (validate,) = completes(receiver, "validate")
    # each table by its location, the catalog's name of it in the symlinks facet
    outputs = {"quarantine" if o["name"].endswith("_quarantine") else "valid": o for o in validate["outputs"]}
    assert set(outputs) == {"valid", "quarantine"} and validate["outputs"][0]["namespace"] == "file"
    for zone, table in (("valid", "foodtaster.orders"), ("quarantine", "foodtaster.orders_quarantine")):
        assert [i["name"] for i in outputs[zone]["facets"]["symlinks"]["identifiers"]] == [table]
    for zone, rows in (("valid", summary["valid"]), ("quarantine", summary["quarantined"])):
        facets = outputs[zone]["facets"]
        assert facets["dataQualityMetrics"]["rowCount"] == rows
        batch = facets["foodtaster_batch"]
        assert (batch["batchId"], batch["messages"], batch["quarantineRate"]) == (
            BATCH_ID, summary["messages"], summary["quarantine_rate"])
        checks = {(a["assertion"], a.get("column")): a["success"]
                  for a in facets["dataQualityAssertions"]["assertions"]}
        for rule in summary["reasons"]:  # each rule that quarantined messages: failed
            assert False in [ok for (name, _column), ok in checks.items() if name == rule], rule
        assert checks[("quarantine_rate_below_hold_rate", None)] is True
        assert checks[("quarantine_rate_below_alert_rate", None)] is False  # 5% >= alert_rate 2%
        gate = [a for a in facets["dataQualityAssertions"]["assertions"] if a.get("severity") == "error"
                and not a["assertion"].startswith("quarantine_rate")]
        assert len(gate) == len(summary["gate"]["results"]) > 0
    (raw,) = validate["inputs"]
    assert raw["name"].endswith("/raw/orders")
    assert raw["inputFacets"]["dataQualityMetrics"]["rowCount"] == summary["messages"]
    (publish,) = completes(receiver, "publish")
    (valid,) = publish["outputs"]
    assert valid["name"] == outputs["valid"]["name"]
    assert valid["facets"]["foodtaster_batch"]["verdict"] == "published"
    assert valid["facets"]["dataQualityMetrics"]["rowCount"] == summary["valid"]
