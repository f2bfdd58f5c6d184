"""`airflow dags test` end to end on a real metadata DB (SQLite): land, the real Spark job,
gate, publish, alert to a real loopback SMTP server and a real loopback webhook, ledger; then
`foodtaster_orders_redrive` on the batch the module held: the contract fixed, a dry run that
moves nothing, a redrive and a release in one run that publish (Asset events, ledger), a second
redrive that moves nothing. Accounts add up. The tests run in order, each on what the earlier
left: one held run serves the hold and the redrives."""

from __future__ import annotations

import json

import pytest
import yaml
from support.e2e import (
    ALERTING,
    CLEAN,
    DAG_ID,
    DATASET,
    HOLDING,
    VALID_URI,
    asset_events,
    fill_inbox,
    partitions,
    staged,
)
from support.lake import row_count
from support.servers import SmtpSink, WebhookSink

from foodtaster.lake_paths import relative_to_lake
from foodtaster.registry import PROJECT_ROOT
from foodtaster.state import ledger
from foodtaster.state.accounts import check_accounts
from foodtaster.state.dispositions import Dispositions
from foodtaster.state.groups import GroupLog
from foodtaster.state.lake import Lake, exists, read_json
from foodtaster.state.tables import QUARANTINE, VALID, BatchFiles, DatasetTables
from foodtaster_dev.localenv import CDS_ARCHIVE, LocalAirflow

pytestmark = pytest.mark.slow
SLACK_TOKEN = "T000/B000/XXXX"
ONCALL = "data-oncall@example.com"  # pipeline.yaml's orders.alerts.email_to


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("lake"))


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, lake) -> LocalAirflow:
    af = LocalAirflow(home=tmp_path_factory.mktemp("airflow"), lake=lake)
    af.migrate()
    return af


def run_with_sinks(airflow: LocalAirflow, date: str, log, smtp: SmtpSink, slack: WebhookSink):
    airflow.connections = {
        "smtp_default": f"smtp://{smtp.host}:{smtp.port}?from_email=foodtaster%40example.com"
                        "&disable_tls=true&disable_ssl=true",
        "slack_default": {"conn_type": "slackwebhook", "host": f"{slack.url}/services",
                          "password": SLACK_TOKEN},
    }
    run = airflow.dags_test(DAG_ID, date, log=log)
    # a held batch fails its run at the verdict task alone (docs/decisions/017)
    held = run["tasks"].get("verdict") == "failed"
    assert run["state"] == ("failed" if held else "success"), f"{run}\n{log.read_text()[-5000:]}"
    failed = [task for task, state in run["tasks"].items() if state == "failed"]
    assert failed == (["verdict"] if held else []), run
    if CDS_ARCHIVE.is_file():  # made for these JVMs: a stale one or another class path is a loss
        assert "Unable to use shared archive" not in log.read_text(), \
            f"the Spark JVMs did not map {CDS_ARCHIVE}: rebuild it with `make cds`"
    return run


def ledger_entry(lake: str, batch_id: str) -> dict:
    (entry,) = [e for e in ledger.batch_entries(Lake(lake), DATASET) if e["batch_id"] == batch_id]
    return entry


def test_a_clean_batch_is_published_with_no_alert(airflow, lake, tmp_path):
    date, batch_id = "2026-11-20", "20261120"
    batch = fill_inbox(lake, date, **CLEAN)
    with SmtpSink() as smtp, WebhookSink() as slack:
        run = run_with_sinks(airflow, date, tmp_path / "run.log", smtp, slack)
    assert run["tasks"] == {
        "land": "success", "has_messages": "success", "validate": "success", "read_verdict": "success",
        "publish": "success", "alert": "skipped", "ledger": "success", "verdict": "success",
        "retry": "success",
    }
    assert smtp.messages == [] and slack.requests == []
    # nothing quarantined yet, so nothing to retry: the retry task started no Spark
    assert "event=retry_skipped" in (tmp_path / "run.log").read_text()

    expected = batch.counts()
    the_lake = Lake(lake)
    assert row_count(the_lake, DATASET, VALID, batch_id) == expected["valid"] == 200
    assert not staged(the_lake, DATASET, batch_id)
    entry = ledger_entry(lake, batch_id)
    assert entry["verdict"] == "published"
    assert (entry["messages"], entry["valid"], entry["quarantined"]) == (200, 200, 0)

    (event,) = [e for e in asset_events(airflow, VALID_URI) if e["extra"]["batch_id"] == batch_id]
    assert event["extra"]["valid"] == 200 and event["extra"]["quarantined"] == 0
    assert event["extra"]["batch_date"] == date
    assert (event["dag_id"], event["task_id"]) == (DAG_ID, "publish")


def test_a_manual_run_reprocesses_the_batch_named_in_its_params(airflow, lake, tmp_path):
    """Runs after the clean batch: its batch id, given to a run of the reprocess DAG, is
    validated and published again in place (same partition, same rows)."""
    date, batch_id = "2026-11-20", "20261120"
    the_lake = Lake(lake)
    valid_before = row_count(the_lake, DATASET, VALID, batch_id)
    log = tmp_path / "run.log"
    run = airflow.dags_test(f"{DAG_ID}_reprocess", "2026-11-26", conf={"batch_id": batch_id}, log=log)
    assert run["state"] == "success", log.read_text()[-5000:]
    assert run["tasks"]["validate"] == "success" and run["tasks"]["publish"] == "success"
    assert row_count(the_lake, DATASET, VALID, batch_id) == valid_before == 200
    assert partitions(lake, "valid") == [f"batch_date={date}/batch_id={batch_id}"]
    assert partitions(lake, "raw") == [f"batch_date={date}/batch_id={batch_id}"]
    entry = ledger_entry(lake, batch_id)
    assert entry["reprocess"] is True and entry["verdict"] == "published"


def test_a_batch_over_alert_rate_is_published_and_alerts_by_email_and_slack(
    airflow, lake, tmp_path
):
    date, batch_id = "2026-11-21", "20261121"
    batch = fill_inbox(lake, date, seed=11, **ALERTING)
    expected = batch.counts()
    with SmtpSink() as smtp, WebhookSink() as slack:
        run = run_with_sinks(airflow, date, tmp_path / "run.log", smtp, slack)
    assert run["tasks"]["publish"] == "success"
    assert run["tasks"]["alert"] == "success"
    the_lake = Lake(lake)
    assert row_count(the_lake, DATASET, VALID, batch_id) == expected["valid"]
    assert row_count(the_lake, DATASET, QUARANTINE, batch_id) == expected["quarantined"]

    # email: received by the real SMTP server, with the contents an operator needs
    (mail,) = smtp.messages
    assert smtp.envelopes[0][1] == [ONCALL]
    subject = mail["Subject"]
    assert "orders" in subject and batch_id in subject and "%" in subject
    html = mail.get_body(preferencelist=("html",)).get_content()
    text = mail.get_body(preferencelist=("plain",)).get_content()
    assert "&lt;script&gt;" in html
    assert "<script>" not in html
    assert str(expected["quarantined"]) in text
    # where the quarantined rows are: the table, the batch; the report relative to the lake
    assert f"Quarantine table: foodtaster.{DATASET}_quarantine (batch_id = '{batch_id}')" in text
    assert relative_to_lake(the_lake.report(DATASET, batch_id), the_lake.root) in text
    assert "customer_id" in html or "currency" in html  # the top reasons

    # Slack: one POST to the webhook path, escaped too
    (request,) = slack.requests
    path, _headers, body = request
    assert path == f"/services/{SLACK_TOKEN}"
    payload = body.decode("utf-8")
    assert "&lt;script&gt;" in payload and "<script>" not in payload
    assert batch_id in json.loads(payload)["text"]

    entry = ledger_entry(lake, batch_id)
    assert entry["verdict"] == "published" and entry["severity"] == "warning"
    assert entry["alerted"] and exists(entry["alert_file"])


def test_a_batch_over_hold_rate_is_held_not_published(airflow, lake, tmp_path):
    date, batch_id = "2026-11-22", "20261122"
    batch = fill_inbox(lake, date, seed=13, **HOLDING)
    with SmtpSink() as smtp, WebhookSink() as slack:
        run = run_with_sinks(airflow, date, tmp_path / "run.log", smtp, slack)
    assert run["tasks"]["publish"] == "skipped"
    assert run["tasks"]["alert"] == "success"
    assert run["tasks"]["ledger"] == "success"
    # red where an engineer looks first: the run fails at its verdict task (docs/decisions/017)
    assert run["tasks"]["verdict"] == "failed" and run["state"] == "failed"
    the_lake = Lake(lake)
    assert not (row_count(the_lake, DATASET, VALID, batch_id) > 0)
    assert row_count(the_lake, DATASET, QUARANTINE, batch_id) == (
        batch.counts()["quarantined"]
    )
    entry = ledger_entry(lake, batch_id)
    assert entry["verdict"] == "held" and entry["severity"] == "critical"
    assert entry["quarantine_rate"] >= 0.20
    assert not [e for e in asset_events(airflow, VALID_URI) if e["extra"]["batch_id"] == batch_id]
    (mail,) = smtp.messages
    assert "HELD" in mail["Subject"]
    assert len(slack.requests) == 1


def test_an_empty_interval_ends_green_with_nothing_downstream_but_the_ledger(
    airflow, lake, tmp_path
):
    """Runs after the held batch: an operator purged one of its poison messages, so the
    retry task has a group to release and starts the retry pass in Spark, which releases it."""
    date, batch_id = "2026-11-23", "20261123"
    the_lake = Lake(lake)
    poison = next(p for p in GroupLog(the_lake, DATASET).open_poison() if p.batch_id == "20261122")
    held_batch, rest = poison.lineage.split("|", 1)
    source_file, _, line = rest.rpartition("|")
    Dispositions(the_lake, DATASET).record("purged", [(held_batch, source_file, int(line))], by="test",
                                           why="a bad order, given up on")
    log = tmp_path / "run.log"
    run = airflow.dags_test(DAG_ID, date, log=log)
    assert run["state"] == "success", log.read_text()[-5000:]
    assert "event=retry_started" in log.read_text()
    assert poison.lineage not in {p.lineage for p in GroupLog(the_lake, DATASET).open_poison()}
    assert run["tasks"] == {
        "land": "success", "has_messages": "success", "validate": "skipped", "read_verdict": "skipped",
        "publish": "skipped", "alert": "skipped", "ledger": "success", "verdict": "skipped",
        "retry": "success",  # a referenced dataset may have landed meanwhile
    }
    assert ledger_entry(lake, batch_id)["verdict"] == "empty"


REDRIVE_DAG_ID = f"{DAG_ID}_redrive"
HELD_DATE, HELD = "2026-11-22", "20261122"  # the batch test_a_batch_over_hold_rate_is_held_not_published held
FIX = "foodtaster_dev.contracts.orders_fix:OrdersCurrencyFix"


@pytest.fixture(scope="module")
def fixed(airflow, lake, tmp_path_factory):
    """After the held batch (and the empty interval's purge): the contract fix, a registry whose
    orders contract accepts lowercase currency codes; no alert connections."""
    the_lake = Lake(lake)
    assert [e["verdict"] for e in ledger.batch_entries(the_lake, DATASET) if e["batch_id"] == HELD] == [
        "held"], "runs after test_a_batch_over_hold_rate_is_held_not_published"
    document = yaml.safe_load((PROJECT_ROOT / "pipeline.yaml").read_text())
    document["datasets"][DATASET]["contract"] = FIX
    registry = tmp_path_factory.mktemp("registry") / "pipeline.yaml"
    registry.write_text(yaml.safe_dump(document, sort_keys=False))
    airflow.registry, airflow.connections = registry, {}
    return airflow, the_lake


def _redrive_run(af, logical_date, conf, tmp_path):
    log = tmp_path / "redrive.log"
    run = af.dags_test(REDRIVE_DAG_ID, logical_date, conf=conf, log=log)
    assert run["state"] == "success", f"{run}\n{log.read_text()[-5000:]}"
    return run


def _redrive_partitions(lake: Lake) -> list[BatchFiles]:
    """The redrives' batches main of the valid table holds."""
    return [b for b in DatasetTables(lake, DATASET).batches(VALID) if b.batch_id.startswith("redrive-")]


def test_a_dry_run_from_the_form_moves_nothing(fixed, tmp_path):
    af, lake = fixed
    run = _redrive_run(af, "2026-12-01", {"date_from": HELD_DATE}, tmp_path)  # dry run is the default
    assert run["tasks"] == {"plan": "success", "wants_redrive": "success", "redrive": "success",
                            "announce": "skipped", "release": "skipped"}
    assert _redrive_partitions(lake) == []
    check_accounts(lake, DATASET)


def test_a_redrive_and_a_release_publish_and_the_ledger_tells_it(fixed, tmp_path):
    af, lake = fixed
    # the empty interval's retry published a released group's rows of the held batch already
    retried = check_accounts(lake, DATASET)[HELD]["redriven"]
    conf = {"date_from": HELD_DATE, "date_to": HELD_DATE, "dry_run": False,
            "why": "lowercase currency accepted", "release_batch": HELD}
    run = _redrive_run(af, "2026-12-02", conf, tmp_path)
    assert run["tasks"]["announce"] == "success" and run["tasks"]["release"] == "success"
    (partition,) = _redrive_partitions(lake)
    assert partition.batch_date == HELD_DATE
    moved = partition.rows
    assert moved > 0
    assert (row_count(lake, DATASET, VALID, HELD) > 0)  # released
    (entry,) = [e for e in ledger.batch_entries(lake, DATASET) if e["batch_id"] == HELD]
    assert entry["verdict"] == "published" and entry["released"]["why"] == "lowercase currency accepted"
    redrives = ledger.redrive_entries(lake, DATASET)
    assert [r.get("kind", "redrive") for r in redrives] == ["release", "redrive"]  # release runs first
    assert redrives[1]["counts"]["published"] == moved
    accounts = check_accounts(lake, DATASET)
    assert accounts[HELD]["redriven"] == retried + moved
    events = {e["task_id"]: e["extra"] for e in asset_events(af, VALID_URI) if e["dag_id"] == REDRIVE_DAG_ID}
    assert events["announce"]["published"] == moved and events["release"]["batch_id"] == HELD
    report = read_json(lake.report(DATASET, redrives[1]["batch_id"]) + "/redrive.json")
    assert report["by_rule"]["currency.isin"]["published"] == moved


def test_a_second_redrive_moves_nothing(fixed, tmp_path):
    af, lake = fixed
    run = _redrive_run(af, "2026-12-03", {"date_from": HELD_DATE, "dry_run": False, "why": "again"}, tmp_path)
    assert run["tasks"]["redrive"] == "success" and run["tasks"]["announce"] == "skipped"
    assert len(_redrive_partitions(lake)) == 1
    check_accounts(lake, DATASET)
