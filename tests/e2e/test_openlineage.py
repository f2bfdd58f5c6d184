"""OpenLineage through Airflow's provider, to a real HTTP receiver on loopback: a run of the
orders DAG (`airflow dags test`, the real Spark job) sends the validate and publish tasks'
events with the DataQualityMetrics and DataQualityAssertions facets and the batch's verdict, in
the batch's own numbers."""

from __future__ import annotations

import json
import time

import pytest
from support.e2e import ALERTING, DAG_ID, fill_inbox
from support.servers import WebhookSink

from foodtaster.state.lake import Lake, read_json
from foodtaster_dev.localenv import LocalAirflow

pytestmark = pytest.mark.slow
DATE, BATCH_ID = "2026-11-20", "20261120"


def completes(receiver: WebhookSink, task_id: str) -> list[dict]:
    events = [json.loads(body) for path, _headers, body in receiver.requests if path.endswith("/lineage")]
    return [e for e in events if e.get("eventType") == "COMPLETE"
            and e["job"]["name"] == f"{DAG_ID}.{task_id}"]


def test_validate_and_publish_send_the_batch_quality_facets(tmp_path):
    lake = str(tmp_path / "lake")
    fill_inbox(lake, DATE, **ALERTING)  # 5% html poison: published, alerted
    with WebhookSink() as receiver:
        af = LocalAirflow(home=tmp_path / "airflow", lake=lake, extra_env={
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
                {"type": "http", "url": receiver.url, "endpoint": "api/v1/lineage"}),
            "AIRFLOW__OPENLINEAGE__NAMESPACE": "foodtaster-test",
            "AIRFLOW__OPENLINEAGE__EXECUTION_TIMEOUT": "120"})  # a busy 2-core machine
        af.migrate()
        run = af.dags_test(DAG_ID, DATE, log=tmp_path / "run.log")
        assert run["state"] == "success", f"{run}\n{(tmp_path / 'run.log').read_text()[-4000:]}"
        deadline = time.monotonic() + 60  # the provider may send after the task is done
        while time.monotonic() < deadline and not (completes(receiver, "validate")
                                                   and completes(receiver, "publish")):
            time.sleep(1)
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
