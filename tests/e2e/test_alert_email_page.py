"""The alert email as a person sees it: a held batch's alert (with its trend) sent through
the SMTP provider to the real loopback SMTP server, the received HTML rendered in Debian's
headless chromium with its inline chart resolved, a screenshot taken, and what is on the
page checked: the rate, the chart actually drawn, the commands, the link to the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.alerts import HELD_ID, RUN_URL, held_alert_with_trend
from support.browser import Browser, chromium_binary
from support.environment import need
from support.servers import SmtpSink

from foodtaster.registry import AlertChannels, DatasetConfig
from foodtaster_airflow import channels

CONFIG = DatasetConfig(
    name="orders", contract="contracts.orders:Orders", expectation_suite="expectations/orders.json",
    alert_rate=0.02, hold_rate=0.20, alerts=AlertChannels(email_to=("data-oncall@example.com",)),
)


def received_page(message, folder: Path) -> Path:
    """The email's HTML as a file a browser opens: each inline image written beside it under
    its Content-ID and the page's `cid:` sources pointed at those files."""
    page = message.get_body(("related", "html")).get_body(("html",)).get_content()
    for part in message.walk():
        cid = (part["Content-ID"] or "").strip("<>")
        if cid and part.get_content_maintype() == "image":
            name = f"{cid}.{part.get_content_subtype()}"
            (folder / name).write_bytes(part.get_content())
            page = page.replace(f'src="cid:{cid}"', f'src="{name}"')
    path = folder / "alert.html"
    path.write_text(page, encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_received_alert_email_shows_the_rate_chart_commands_and_run_link(
    tmp_path, monkeypatch
):
    chromium = chromium_binary()
    need(chromium is not None, "Debian's chromium (make browser-tools)")
    alert, _ = held_alert_with_trend(str(tmp_path / "lake"), CONFIG)
    with SmtpSink() as sink:
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_TEST", json.dumps({
            "conn_type": "smtp", "host": sink.host, "port": sink.port,
            "extra": {"from_email": "foodtaster@example.com", "disable_ssl": True,
                      "disable_tls": True}}))
        channels.send_email(alert, ["data-oncall@example.com"], "smtp_test")
    [message] = sink.messages
    page = received_page(message, tmp_path)
    assert "cid:" not in page.read_text(encoding="utf-8")

    with Browser(chromium) as browser:
        browser.go(page.as_uri())
        text = browser.script("return document.body.innerText;")
        browser.script("window.scrollTo(0, 0);")
        shot = browser.screenshot(tmp_path / "alert_email.png")
        chart = browser.script(
            "const i = document.querySelector('img');"
            "return {complete: i.complete, width: i.naturalWidth, height: i.naturalHeight,"
            " shown: i.getBoundingClientRect().width, src: i.getAttribute('src')};")
        links = browser.script(
            "return [...document.querySelectorAll('a')].map(a => [a.textContent, a.href]);")
        commands = browser.script(
            "return [...document.querySelectorAll('code')].map(c => c.textContent);")
        # the chart and the commands, each in view, for a person to look at
        browser.script("document.querySelector('img').scrollIntoView();")
        browser.screenshot(tmp_path / "alert_email_chart.png")
        browser.script("document.querySelector('code').scrollIntoView();")
        browser.screenshot(tmp_path / "alert_email_next.png")
    assert shot.stat().st_size > 20_000

    # the rate and its thresholds, the trend and its direction, the producers
    assert f"orders batch {HELD_ID}: quarantine rate 29.00% (hold_rate 20.00%)" in text
    assert "HELD" in text and "8.80% quarantined" in text and "RISING" in text
    # the producers of this batch's own quarantined messages (checkout-svc sent only earlier ones)
    assert "Producers of the 116 quarantined messages of this batch" in text
    assert text.index("fulfilment-svc") < text.index("loyalty-svc") and "checkout-svc" not in text
    # the chart was loaded and drawn (a broken image has naturalWidth 0), at its page width
    assert chart["complete"] and chart["src"] == "trend.png", chart
    assert chart["width"] >= 800 and chart["height"] >= 300 and chart["shown"] > 600, chart
    # what to do next, as commands a person copies
    assert f"foodtaster quarantine show --dataset orders --batch {HELD_ID}" in commands
    assert f'foodtaster release --dataset orders --batch {HELD_ID} --why "..."' in commands
    assert "foodtaster redrive --dataset orders --from 2026-11-12 --to 2026-11-12 --dry-run" \
        in commands
    assert any(cmd.startswith("foodtaster poison add --dataset orders") for cmd in commands)
    # the run, one click away
    assert ["orders run in the Airflow UI", RUN_URL] in links
