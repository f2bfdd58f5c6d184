"""Alerts over real loopback SMTP and HTTP servers: what arrives is what an operator reads.

Sent as the DAG sends them: through Airflow's SMTP and Slack providers' hooks, over
connections defined as `AIRFLOW_CONN_*` variables pointing at the sinks."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest
from support.servers import SmtpSink, WebhookSink

from foodtaster.ops.alerts import (
    SAMPLE_CHARS,
    AlertDeliveryError,
    build_batch_alert,
    build_disabled_alert,
    write_alert_file,
)
from foodtaster.policy import Facts, decide
from foodtaster.registry import AlertChannels, DatasetConfig
from foodtaster.state.lake import Lake
from foodtaster_airflow import channels

CONFIG = DatasetConfig(
    name="orders", contract="contracts.orders:Orders", expectation_suite="expectations/orders.json",
    alert_rate=0.02, hold_rate=0.20, disable_after=3,
    alerts=AlertChannels(email_to=("data-oncall@example.com",)),
)
SCRIPT = '{"customer_id":"<script>alert(1)</script>","note":"a & b"}'
PATHS = {
    "report": "/lake/reports/orders/20261120",
    "data_docs": "/lake/reports/orders/20261120/data_docs/index.html",
}


def summary(**changes: Any) -> dict[str, Any]:
    return {
        "dataset": "orders", "batch_id": "20261120", "batch_date": "2026-11-20",
        "messages": 1000, "valid": 950, "quarantined": 45, "duplicates_dropped": 5,
        "quarantine_rate": 0.045,
        "reasons": {"amount.greater_than_or_equal_to(0)": 12, "json.invalid": 8,
                    "currency.isin": 25},
        "samples": [
            {"source_file": "part-1.jsonl", "line_number": 17, "raw": SCRIPT, "reasons": [
                {"layer": "contract", "rule": "currency.isin", "column": "currency",
                 "message": "currency must be one of EUR, USD", "value": "XYZ"},
            ]},
            {"source_file": "part-2.jsonl", "line_number": 3, "raw": "{'single': quotes}",
             "reasons": [{"layer": "parse", "rule": "json.invalid", "column": None,
                          "message": "not strict JSON", "value": None}]},
        ],
        "gate": {"passed": True, "failed": []},
        "paths": PATHS,
        "tables": {"names": {"valid": "orders", "quarantine": "orders_quarantine", "namespace": "foodtaster",
                             "catalog": "foodtaster"}, "branch": "audit-20261120"},
        "timings": {"total_s": 12.3},
        **changes,
    }


def batch_alert(**changes: Any):
    document = summary(**changes)
    return build_batch_alert(document, decide(Facts.of_summary(document), CONFIG), CONFIG, {})


@pytest.fixture(autouse=True)
def _own_connections(monkeypatch):
    """Each test defines the connections it sends through; none leaks to the next."""
    for name in [n for n in os.environ if n.startswith("AIRFLOW_CONN_")]:
        monkeypatch.delenv(name)
    yield
    for name in ("AIRFLOW_CONN_SMTP_TEST", "AIRFLOW_CONN_SLACK_TEST"):
        os.environ.pop(name, None)


def send_email(alert, *, host: str, port: int, sender: str, recipients: list[str],
               login: str | None = None, password: str | None = None, timeout: float = 30):
    """Define an SMTP connection to the sink (plain SMTP: the SMTP provider's disable_ssl and
    disable_tls) and send through it, as the alert task does."""
    extra = {"from_email": sender, "disable_ssl": True, "disable_tls": True,
             "timeout": int(timeout), "retry_limit": 0}
    os.environ["AIRFLOW_CONN_SMTP_TEST"] = json.dumps({
        "conn_type": "smtp", "host": host, "port": port, "login": login, "password": password,
        "extra": extra})
    channels.send_email(alert, recipients, "smtp_test")


def send_slack(alert, webhook_url: str, timeout: float = 30):
    """Define a Slack webhook connection (the whole URL as its password, as the Slack
    provider allows) and post through it, as the alert task does."""
    os.environ["AIRFLOW_CONN_SLACK_TEST"] = json.dumps({
        "conn_type": "slackwebhook", "password": webhook_url,
        "extra": {"timeout": int(timeout)}})
    channels.send_slack(alert, "slack_test")


def test_email_arrives_with_the_facts_and_samples_escaped() -> None:
    alert = batch_alert()
    with SmtpSink() as sink:
        send_email(alert, host=sink.host, port=sink.port, sender="foodtaster@example.com",
                   recipients=list(CONFIG.alerts.email_to))
    [message] = sink.messages
    assert sink.envelopes == [("foodtaster@example.com", ["data-oncall@example.com"])]
    assert message["Subject"] == (
        "[foodtaster] orders batch 20261120: quarantine rate 4.50% (alert_rate 2.00%) — WARNING"
    )
    assert message["To"] == "data-oncall@example.com"
    assert message["X-Foodtaster-Severity"] == "warning"
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(("plain",)).get_content()
    page = message.get_body(("html",)).get_content()
    for body in (text, page):
        for fact in ("1000", "950", "45", "4.50%", "2.00%", "20.00%", "published",
                     "amount.greater_than_or_equal_to(0)", "currency.isin", "json.invalid",
                     "part-1.jsonl line 17", *PATHS.values()):
            assert fact in body, fact
    assert SCRIPT in text
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a &amp; b" in page
    # top reasons, most frequent first, with counts
    assert page.index("currency.isin</td><td") < page.index("amount.greater_than_or_equal_to")
    assert "<td style" in page and ">25</td>" in page and ">12</td>" in page


def test_held_batch_subject_names_hold_rate_and_gate_failures() -> None:
    alert = batch_alert(
        quarantine_rate=0.3, valid=695, quarantined=300,
        gate={"passed": False, "failed": [{"expectation": "expect_column_median_to_be_between",
                                           "column": "amount", "observed": 0.5}]},
    )
    assert alert.subject == (
        "[foodtaster] orders batch 20261120: quarantine rate 30.00% (hold_rate 20.00%) — HELD"
    )
    assert alert.severity == "critical"
    assert "HELD: its valid rows are not published" in alert.text
    assert "batch gate failed: expect_column_median_to_be_between" in alert.text
    assert "expect_column_median_to_be_between on amount: observed 0.5" in alert.html


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_email_with_login() -> None:
    alert = batch_alert()
    with SmtpSink(credentials={"alerts": "s3cret"}) as sink:
        send_email(alert, host=sink.host, port=sink.port, sender="foodtaster@example.com",
                   recipients=["a@example.com", "b@example.com"], login="alerts",
                   password="s3cret")
        with pytest.raises(AlertDeliveryError, match=f"email via 127.0.0.1:{sink.port}"):
            send_email(alert, host=sink.host, port=sink.port, sender="foodtaster@example.com",
                       recipients=["a@example.com"], login="alerts", password="wrong")
    assert [envelope[1] for envelope in sink.envelopes] == [["a@example.com", "b@example.com"]]


def test_email_to_a_closed_port_is_a_clear_error() -> None:
    with SmtpSink() as sink:
        port = sink.port
    with pytest.raises(AlertDeliveryError, match="email via 127.0.0.1"):
        send_email(batch_alert(), host="127.0.0.1", port=port, sender="f@example.com",
                   recipients=["a@example.com"], timeout=5)


def test_slack_webhook_gets_escaped_mrkdwn() -> None:
    alert = batch_alert()
    with WebhookSink() as sink:
        send_slack(alert, f"{sink.url}/services/T000/B000/XXXX")
    [(path, headers, body)] = sink.requests
    assert path == "/services/T000/B000/XXXX"
    assert headers["Content-Type"].startswith("application/json")
    payload = json.loads(body)
    assert payload == alert.slack_payload()
    assert payload["blocks"][0] == {"type": "header", "text": {
        "type": "plain_text", "text": alert.subject}}
    sections = [block["text"]["text"] for block in payload["blocks"][1:]]
    assert all(block["text"]["type"] == "mrkdwn" for block in payload["blocks"][1:])
    everything = "\n".join(sections)
    for fact in ("*Messages:* 1000", "*Quarantined:* 45", "4.50%", "alert_rate 2.00%",
                 "`currency.isin` — 25", "`json.invalid` — 8", *PATHS.values()):
        assert fact in everything, fact
    assert "*Quarantine table:* `foodtaster.orders_quarantine (batch_id = '20261120')`" in everything
    assert "<script>" not in body.decode()
    assert (
        "```{\"customer_id\":\"&lt;script&gt;alert(1)&lt;/script&gt;\",\"note\":\"a &amp; b\"}```"
        in everything
    )
    assert all(len(section) <= 3000 for section in sections)


def test_long_samples_are_cut_in_every_channel() -> None:
    huge = "<b>" + "x" * 100_000 + "```" + "&" * 5000
    alert = batch_alert(samples=[{"source_file": "big.jsonl", "line_number": 1, "raw": huge,
                                  "reasons": [{"layer": "bytes", "rule": "bytes.too_long",
                                               "column": None, "message": "too long",
                                               "value": None}] * 9}])
    assert len(alert.text) < 5000 and len(alert.html) < 10_000
    assert f"message cut to {SAMPLE_CHARS} of {len(huge)} characters" in alert.text
    assert "and 4 more reasons" in alert.text
    assert all(len(section) <= 3000 for section in alert.slack_sections)
    assert "<b>" not in alert.html and "&lt;b&gt;" in alert.html


def test_a_failing_webhook_raises_without_leaking_the_url() -> None:
    with WebhookSink(status=500, body=b"invalid_payload") as sink:
        base = sink.url
        url = f"{base}/services/T000/B000/SECRET"
        with pytest.raises(AlertDeliveryError) as caught:
            send_slack(batch_alert(), url)
    message = str(caught.value)
    assert "HTTP 500" in message and "invalid_payload" in message
    assert base in message and "SECRET" not in message
    assert len(sink.requests) == 1


def test_an_unreachable_webhook_raises() -> None:
    with WebhookSink() as sink:
        url = sink.url
    with pytest.raises(AlertDeliveryError, match="unreachable"):
        send_slack(batch_alert(), url + "/hook", timeout=5)
    with pytest.raises(ValueError, match="http"):
        send_slack(batch_alert(), "file:///etc/passwd")


def test_disabled_alert_lists_held_batches_and_how_to_re_enable() -> None:
    held = [
        {"batch_id": f"2026112{day}", "batch_date": f"2026-11-2{day}", "messages": 100,
         "quarantine_rate": 0.4, "verdict": "held",
         "why": ["quarantine rate 40.00% >= hold_rate 20.00%"]}
        for day in range(3)
    ]
    alert = build_disabled_alert("orders", held, CONFIG)
    assert (alert.kind, alert.batch_id, alert.severity) == ("disabled", "20261122", "critical")
    assert "3 held batches in a row" in alert.subject and "foodtaster_orders" in alert.subject
    with SmtpSink() as smtp, WebhookSink() as hook:
        send_email(alert, host=smtp.host, port=smtp.port, sender="f@example.com",
                   recipients=["ops@example.com"])
        send_slack(alert, hook.url)
    text = smtp.messages[0].get_body(("plain",)).get_content()
    slack = "\n".join(b["text"]["text"] for b in json.loads(hook.requests[0][2])["blocks"])
    for body in (text, smtp.messages[0].get_body(("html",)).get_content(), slack):
        assert "paused itself after 3 held batches in a row" in body
        assert "airflow dags unpause foodtaster_orders" in body
        for batch in held:
            assert batch["batch_id"] in body
        assert "40.00%" in body
    with pytest.raises(ValueError):
        build_disabled_alert("orders", [], CONFIG)


def test_write_alert_file(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    alert = batch_alert()
    path = write_alert_file(lake, alert)
    assert path == lake.state("alerts", "orders", "20261120-batch.html")
    page = Path(path).read_text(encoding="utf-8")
    assert page == alert.html and page.startswith("<!DOCTYPE html>")
    stored = json.loads(Path(path).with_suffix(".json").read_text(encoding="utf-8"))
    assert stored["subject"] == alert.subject
    assert stored["text"] == alert.text
    assert stored["slack_payload"] == alert.slack_payload()
    # a rerun's alert replaces the file
    write_alert_file(lake, batch_alert(quarantine_rate=0.05))
    assert "5.00%" in Path(path).read_text(encoding="utf-8")


def test_the_alert_says_where_the_rows_are_in_the_tables_by_the_verdict() -> None:
    # A held batch's valid rows wait on its audit branch; a published one's are on main, tagged.
    held, published = (" ".join(alert.text.split()) for alert in (batch_alert(quarantine_rate=0.287),
                                                                    batch_alert()))
    branch = "Valid rows: foodtaster.orders on branch audit-20261120 (not published)"
    tagged = "Valid rows: foodtaster.orders on main, tag batch-20261120"
    assert branch in held and tagged not in held
    assert tagged in published and branch not in published
    for text in (held, published):
        assert "Quarantine table: foodtaster.orders_quarantine (batch_id = '20261120')" in text
        assert "Report: /lake/reports/orders/20261120" in text


def test_the_alert_log_line_shows_the_rate_as_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="foodtaster")
    write_alert_file(Lake(str(tmp_path / "lake")), batch_alert(quarantine_rate=0.287))
    lines = [record.getMessage() for record in caplog.records
             if "event=alert_written" in record.getMessage()]
    assert len(lines) == 1
    assert "quarantine rate 28.70% (hold_rate 20.00%)" in lines[0]
    assert "%%" not in lines[0] and lines[0].startswith("dataset=orders batch=20261120 ")
    # the alert text line is %-formatted with args: it keeps single percent signs too
    assert any("Quarantine rate:" in r.getMessage() and "28.70% (alert_rate 2.00%" in
               r.getMessage() for r in caplog.records)


def test_the_email_carries_the_trend_chart_inline_the_next_commands_and_the_run_link(tmp_path):
    from support.alerts import HELD_ID, RUN_URL, held_alert_with_trend

    alert, found = held_alert_with_trend(str(tmp_path / "lake"), CONFIG)
    # the pending batch is in the trend, in data order, and the feed is getting worse
    assert [b.batch_id for b in found.batches][-1] == HELD_ID
    assert found.rising and found.recent_rate == (2 + 6 + 12 + 40 + 116) / 2000
    assert found.producers[0] == ("fulfilment-svc", 1 + 3 + 6 + 20 + 100)
    with SmtpSink() as sink:
        send_email(alert, host=sink.host, port=sink.port, sender="foodtaster@example.com",
                   recipients=["data-oncall@example.com"])
    [message] = sink.messages
    assert message.get_content_type() == "multipart/alternative"
    related = message.get_payload()[1]
    assert related.get_content_type() == "multipart/related"
    page_part, image = related.get_payload()
    assert image.get_content_type() == "image/png" and image["Content-ID"] == "<trend>"
    assert image.get_content().startswith(b"\x89PNG") and len(image.get_content()) > 5000
    page = page_part.get_content()
    text = message.get_body(("plain",)).get_content()
    assert '<img src="cid:trend"' in page
    commands = (
        f"foodtaster quarantine show --dataset orders --batch {HELD_ID}",
        f"foodtaster poison add --dataset orders --batch {HELD_ID} --file part-1.jsonl "
        '--line 7 --why "..."',
        f'foodtaster release --dataset orders --batch {HELD_ID} --why "..."',
        "foodtaster redrive --dataset orders --from 2026-11-12 --to 2026-11-12 --dry-run",
    )
    for body, quoted in ((text, str), (page, lambda c: c.replace('"', "&quot;"))):
        assert "Last 5 batches:" in body or "Last 5 batches</th>" in body
        assert "8.80% quarantined" in body and "RISING" in body
        # the producers of this batch's 116 quarantined messages, not of the chart's window
        table = re.sub(r"<[^>]+>", " ", body[body.index("Producers of the 116 quarantined messages "
                                                          "of this batch"):])
        rows = re.findall(r"(fulfilment-svc|loyalty-svc)\W+(\d+)", table)
        assert rows[:2] == [("fulfilment-svc", "100"), ("loyalty-svc", "16")], table[:600]
        assert "checkout-svc" not in body  # sent none of this batch's, only earlier ones
        for command in commands:
            assert quoted(command) in body, command
    assert RUN_URL in text and f'<a target="_top" href="{RUN_URL}">' in page.replace("&amp;", "&")
    # Slack: the numbers and the link, no image
    with WebhookSink() as hook:
        send_slack(alert, f"{hook.url}/services/T0/B0/X")
    slack = "\n".join(b["text"]["text"] for b in json.loads(hook.requests[0][2])["blocks"][1:])
    assert "8.80% quarantined" in slack and "RISING" in slack and f"<{RUN_URL}|" in slack
    assert "cid:" not in slack and "`foodtaster redrive --dataset orders" in slack


def test_a_published_batch_has_no_release_or_redrive_command(tmp_path):
    alert = batch_alert()
    assert "foodtaster quarantine show --dataset orders --batch 20261120" in alert.text
    assert "foodtaster poison add --dataset orders --batch 20261120 --file part-1.jsonl --line 17" \
        in alert.text
    assert "foodtaster release" not in alert.text and "foodtaster redrive" not in alert.text
    assert alert.images == () and "<img" not in alert.html


def test_the_alert_file_shows_the_chart_beside_it(tmp_path):
    from support.alerts import held_alert_with_trend

    alert, _ = held_alert_with_trend(str(tmp_path / "lake"), CONFIG)
    path = Path(write_alert_file(Lake(str(tmp_path / "lake")), alert))
    page = path.read_text(encoding="utf-8")
    assert 'src="20261112-batch-trend.png"' in page and "cid:" not in page
    assert (path.parent / "20261112-batch-trend.png").read_bytes() == alert.images[0].png


def test_the_alert_says_how_many_were_held_for_their_group_and_how_many_groups_are_open() -> None:
    alert = batch_alert(retrying=7, held_for_group=12, groups_open=5)
    assert "12 of the quarantined; 5 groups open" in alert.text
    assert "7 of the quarantined (retryable rules only)" in alert.text
    assert "groups open" not in batch_alert().text  # a dataset without conversations
