"""The batches plugin's FastAPI app with Airflow's real app objects: routes, status codes
and content types, the user dependency answered as a logged-in user of the embedded default's
auth manager, an admin unless a test logs in another (the browser test on `airflow standalone`
checks the login itself)."""

from __future__ import annotations

import importlib.util

import pytest
from fastapi.testclient import TestClient

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state.lake import Lake, write_json, write_text
from foodtaster.state.ledger import record_batch

REGISTRY = """datasets:
  orders:
    contract: contracts.orders:Orders
    personal: [email]
    expectation_suite: expectations/orders.json
    alert_rate: 0.02
    hold_rate: 0.2
"""


def _plugin():
    spec = importlib.util.spec_from_file_location(
        "foodtaster_batches", PROJECT_ROOT / "plugins" / "foodtaster_batches.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLANTED = '{"order_id": "o-1", "amount": -5, "email": "planted.person@example.com"}'


@pytest.fixture
def client(tmp_path, monkeypatch):
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user

    registry = tmp_path / "pipeline.yaml"
    registry.write_text(REGISTRY)
    lake = Lake(str(tmp_path / "lake"))
    record_batch(lake, "orders", {
        "batch_id": "20261105", "batch_date": "2026-11-05", "messages": 10, "valid": 7,
        "quarantined": 3, "duplicates_dropped": 0, "quarantine_rate": 0.3, "verdict": "held",
        "severity": "critical", "why": "rate", "timings": None, "top_reasons": [["json.invalid", 3]],
    })
    write_json(lake.summary("orders", "20261105"), {"reasons": {"json.invalid": 3}, "samples": [
        {"source_file": "part-1.jsonl", "line_number": 2, "raw": PLANTED,
         "reasons": [{"layer": "parse", "rule": "json.invalid", "message": "not JSON"}]}]})
    monkeypatch.setenv("FOODTASTER_REGISTRY", str(registry))
    monkeypatch.setenv("FOODTASTER_LAKE", lake.root)
    plugin = _plugin()
    create_auth_manager()  # the configured one, as the api-server makes it: the embedded default
    plugin.logged_in = SimpleAuthManagerUser(username="admin", role="admin")
    plugin.app.dependency_overrides[get_user] = lambda: plugin.logged_in
    return TestClient(plugin.app), plugin


def test_the_plugin_registers_its_app_and_a_browse_view(client):
    http, plugin = client
    [app] = plugin.FoodtasterPlugin.fastapi_apps
    [view] = plugin.FoodtasterPlugin.react_apps  # a frame of its own (docs/decisions/019)
    assert not plugin.FoodtasterPlugin.external_views
    assert app["url_prefix"] == "/foodtaster" and app["app"] is plugin.app
    assert (view["bundle_url"], view["url_route"], view["category"], view["destination"]) == (
        "/foodtaster/ui/batches-view.js", "foodtaster", "browse", "nav")
    bundle = http.get("/ui/batches-view.js")
    assert bundle.status_code == 200 and bundle.headers["content-type"].startswith("text/javascript")
    assert "allow-top-navigation-by-user-activation" in bundle.text
    assert "globalThis.AirflowPlugin = FoodtasterBatches" in bundle.text


def test_pages_chart_and_errors(client):
    http, _ = client
    index = http.get("/")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert "20261105" in index.text
    assert '<td class="verdict held">held<span class=who>rate</span></td>' in index.text
    batch = http.get("/datasets/orders/batches/20261105")
    assert batch.status_code == 200
    assert '<td class=n>3</td><td><a href="?reason=json.invalid#samples">json.invalid</a></td>' in batch.text
    # a bad parameter: a sentence on a page, the value quoted short, no JSON
    bad_page = http.get("/datasets/orders/batches/20261105", params={"page": "x" * 20_000})
    assert bad_page.status_code == 400 and bad_page.headers["content-type"].startswith("text/html")
    assert "page: " in bad_page.text and "(20000 characters)" in bad_page.text and len(bad_page.text) < 4000
    assert '{"detail"' not in bad_page.text
    chart = http.get("/datasets/orders/trend.png", params={"since": "2026-11-01"})
    assert chart.status_code == 200 and chart.headers["content-type"] == "image/png"
    assert chart.content.startswith(b"\x89PNG")
    missing = http.get("/datasets/orders/batches/20261199")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "has no batch &quot;20261199&quot; in its ledger" in missing.text
    assert http.get("/datasets/payments/trend.png").status_code == 404
    bad = http.get("/datasets/orders/trend.png", params={"since": "2026-11-31"})
    assert bad.status_code == 400 and "not a calendar day" in bad.text


def test_the_lake_pages_are_served_sandboxed(client, tmp_path):
    http, _ = client
    lake = Lake(str(tmp_path / "lake"))
    docs = lake.report("orders", "20261105") + "/data_docs"
    write_json(lake.summary("orders", "20261105"), {"reasons": {"json.invalid": 3}, "samples": [],
                                                   "paths": {"data_docs": f"{docs}/gate.html"}})
    write_text(f"{docs}/gate.html", "<script>alert(1)</script>")
    write_text(f"{docs}/static/style.css", "p{}")
    write_text(lake.state("alerts", "orders", "20261105-batch.html"), "<p>alert</p>")
    page = http.get("/datasets/orders/batches/20261105/data-docs/gate.html")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    # a producer's value in a lake page may not run: no script, no fetch beyond the page's own
    policy = page.headers["content-security-policy"]
    assert policy.startswith("sandbox ") and "allow-scripts" not in policy and "default-src 'none'" in policy
    assert http.get("/datasets/orders/batches/20261105/data-docs/static/style.css").headers[
        "content-type"].startswith("text/css")
    assert http.get("/datasets/orders/batches/20261105/data-docs/..%2Fsummary.json").status_code == 404
    alert = http.get("/datasets/orders/alerts/20261105-batch.html")
    assert alert.status_code == 200 and alert.text == "<p>alert</p>"
    assert "sandbox" in alert.headers["content-security-policy"]
    assert http.get("/datasets/orders/alerts/20261105-batch.json").status_code == 404


def test_a_viewer_gets_the_masked_view_and_an_admin_or_op_the_raw_bytes(client):
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    http, plugin = client
    shown = {}
    for role in ("viewer", "user", "op", "admin"):
        plugin.logged_in = SimpleAuthManagerUser(username=role, role=role)
        page = http.get("/datasets/orders/batches/20261105")
        assert page.status_code == 200
        shown[role] = page.text
    for role in ("viewer", "user"):
        assert "masked: personal values hidden; ask an admin or op for raw bytes" in shown[role]
        assert "planted.person" not in shown[role] and "example.com" not in shown[role]
        # the masked view: what is not personal as it is, the email as its mask
        assert ("<pre class=masked>{&quot;order_id&quot;: &quot;o-1&quot;, &quot;amount&quot;: -5, "
                "&quot;email&quot;: &quot;‹personal: email, 26 chars, #") in shown[role]
    for role in ("op", "admin"):
        assert "raw bytes: your role may read them" in shown[role]
        assert "<pre class=raw>{&quot;order_id&quot;: &quot;o-1&quot;, &quot;amount&quot;: -5, " \
               "&quot;email&quot;: &quot;planted.person@example.com&quot;}</pre>" in shown[role]
