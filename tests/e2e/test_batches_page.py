"""The batches page in the Airflow UI, in Debian's headless chromium, on a real
`airflow standalone`: a ledger and summaries written into its lake, one real held run
triggered through the REST API, the pages opened as a logged-in user, screenshots taken, and
what a person reads on them checked.

The registry's datasets have no schedule, so the scheduler starts no Spark job of its own:
`orders` is a ledger and summaries written by hand; `orders_held` gets one small batch over
hold_rate (60 messages), the module's one Spark run, triggered as the UI's form does. That run
is red in the DAG list, the runs list and the grid (docs/decisions/017).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
import requests
from support.browser import Browser, chromium_binary
from support.e2e import HOLDING, fill_inbox
from support.environment import need
from support.lake import commit_rows

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state.lake import Lake, write_json
from foodtaster.state.ledger import record_batch
from foodtaster.state.tables import QUARANTINE
from foodtaster_airflow.rest import AirflowApi, AirflowApiError
from foodtaster_dev.localenv import LocalAirflow, free_port, stop_group, wait_for_http

pytestmark = pytest.mark.slow
PASSWORD = "e2e-page"
REGISTRY = f"""
datasets:
  orders:
    description: Order events (page test)
    schedule: null
    start_date: "2026-11-01"
    contract: contracts.orders:Orders
    expectation_suite: {PROJECT_ROOT / "expectations/orders.json"}
    alert_rate: 0.02
    hold_rate: 0.20
  orders_held:
    description: Order events (one real run, held)
    schedule: null
    start_date: "2026-11-01"
    contract: contracts.orders:Orders
    expectation_suite: {PROJECT_ROOT / "expectations/orders.json"}
    alert_rate: 0.02
    hold_rate: 0.20
  order_events:
    description: Order events with personal values (the masked view)
    schedule: null
    start_date: "2026-11-01"
    contract: contracts.order_events:OrderEvents
    expectation_suite: {PROJECT_ROOT / "expectations/order_events.json"}
    personal: [data.customer.name, "data.lines[].phone"]
"""
HOSTILE_RAW = '{"note": "<script>window.pwned=1</script>", "amount": -5 & 1}'
SCREENSHOTS = PROJECT_ROOT / "data" / "screenshots"  # kept after the run, for a person
HELD, HELD_DAG = "orders_held", "foodtaster_orders_held"  # the one real run: a batch over hold_rate
HELD_DATE, HELD_ID = "2026-11-13", "20261113"
# Personal values planted in a batch's quarantined messages: the contract's email, the registry's
# name and a phone inside an array element; one line no JSON object, its email unmarked
PII, PII_DATE, PII_ID = "order_events", "2026-11-14", "20261114"
PLANTED = ("ada.planted@example.com", "Ada Plantedname", "+44 20 7946 0991", "bob.loose@example.org")
PII_RAWS = [json.dumps({"id": f"e-{n}", "data": {"order_id": f"o-{n}", "customer": {
    "id": "c-00001", "name": PLANTED[1], "email": PLANTED[0]}, "lines": [
    {"sku": "SKU-00001", "qty": -n, "phone": PLANTED[2]}]}}) for n in (1, 2)]
PII_RAWS.append(f"not json, mail {PLANTED[3]} at once")


def _entry(day: str, messages: int, quarantined: int, verdict: str, top: list) -> dict:
    return {"batch_id": day.replace("-", ""), "batch_date": day, "messages": messages,
            "valid": messages - quarantined, "quarantined": quarantined, "duplicates_dropped": 0,
            "quarantine_rate": round(quarantined / messages, 6), "verdict": verdict,
            "severity": "critical" if verdict == "held" else None, "why": "", "timings": None,
            "top_reasons": top}


def fill_lake(root: str) -> None:
    lake = Lake(root)
    record_batch(lake, "orders", _entry("2026-11-10", 400, 4, "published", [["currency.isin", 4]]))
    record_batch(lake, "orders", _entry("2026-11-11", 400, 12, "published", [["json.invalid", 12]]))
    record_batch(lake, "orders", _entry("2026-11-12", 400, 116, "held",
                                        [["amount.greater_than(0)", 80], ["json.invalid", 36]]))
    write_json(lake.summary("orders", "20261112"), {
        "batch_id": "20261112", "batch_date": "2026-11-12", "messages": 400, "valid": 284,
        "quarantined": 116, "duplicates_dropped": 0, "quarantine_rate": 0.29,
        "reasons": {"amount.greater_than(0)": 80, "json.invalid": 36}, "published": False,
        "samples": [{"source_file": "file:/inbox/orders/dt=2026-11-12/part-1.jsonl",
                     "line_number": 17, "raw": HOSTILE_RAW,
                     "reasons": [{"layer": "parse", "rule": "json.invalid", "column": None,
                                  "message": "not strict JSON", "value": None}]}],
    })
    # its quarantine as the job writes it: 36 json.invalid (the hostile one first), 80 amount
    rules = ["json.invalid"] * 36 + ["amount.greater_than(0)"] * 80
    raws = [HOSTILE_RAW.encode()] + [b'{"order_id": "o-%d", "amount": -%d}' % (n, n) for n in range(2, 117)]
    source = f"{lake.raw('orders', '2026-11-12', '20261112')}/part-1.jsonl"
    commit_rows(lake, "orders", QUARANTINE, "2026-11-12", "20261112", pa.table({
        "_raw": pa.array(raws, pa.binary()),
        "reasons": [[{"layer": "parse" if rule == "json.invalid" else "row", "rule": rule,
                      "column": None if rule == "json.invalid" else "amount",
                      "message": "not strict JSON" if rule == "json.invalid" else "must be > 0"}]
                    for rule in rules],
        "_batch_id": ["20261112"] * 116, "_source_file": [source] * 116,
        "_line_number": pa.array(range(1, 117), pa.int64()),
        "_ingested_at": ["2026-11-12T01:00:00+00:00"] * 116,
        "producer": ["checkout-svc"] * 90 + ["fulfilment-svc"] * 26,
    }))
    fill_personal(lake)


def fill_personal(lake: Lake) -> None:
    """A batch of `order_events` whose three quarantined messages hold the PLANTED values, its
    reasons as the job writes them (on no personal value)."""
    qty = "data.lines[].qty.greater_than_or_equal_to(1)"
    record_batch(lake, PII, _entry(PII_DATE, 10, 3, "held", [[qty, 2], ["json.invalid", 1]]))
    write_json(lake.summary(PII, PII_ID), {"batch_id": PII_ID, "batch_date": PII_DATE, "messages": 10,
                                           "quarantined": 3, "reasons": {qty: 2, "json.invalid": 1}})
    reasons = [[{"layer": "contract", "rule": qty, "column": "data.lines[0].qty",
                 "message": "must be >= 1", "value": f"-{n}"}] for n in (1, 2)]
    reasons.append([{"layer": "parse", "rule": "json.invalid", "column": None, "message": "not strict JSON",
                     "value": None}])
    commit_rows(lake, PII, QUARANTINE, PII_DATE, PII_ID, pa.table({
        "_raw": pa.array([raw.encode() for raw in PII_RAWS], pa.binary()), "reasons": reasons,
        "_batch_id": [PII_ID] * 3, "_source_file": [f"{lake.raw(PII, PII_DATE, PII_ID)}/part-1.jsonl"] * 3,
        "_line_number": pa.array([2, 5, 9], pa.int64()), "_ingested_at": ["2026-11-14T01:00:00+00:00"] * 3,
    }))


@pytest.fixture(scope="module")
def browser_tools() -> str:
    chromium = chromium_binary()
    need(chromium is not None, "Debian's chromium is not installed (make browser-tools installs it)")
    return chromium


@pytest.fixture(scope="module")
def standalone(tmp_path_factory, browser_tools):
    home = tmp_path_factory.mktemp("airflow")
    lake = str(tmp_path_factory.mktemp("lake"))
    registry = home / "pipeline.yaml"
    registry.write_text(REGISTRY)
    fill_lake(lake)
    af = LocalAirflow(home=home, lake=lake, registry=registry, api_port=free_port(),
                      password=PASSWORD)
    log = home / "standalone.log"
    af.migrate()  # the session's migrated DB: standalone's own migration then finds nothing to do
    process = None
    try:
        process = af.start_standalone(log)
        wait_for_http(f"{af.base_url}/api/v2/version", timeout=150, process=process, log=log)
        yield af, log
    finally:
        stop_group(process)


@pytest.fixture(scope="module")
def held_run(standalone) -> dict:
    """A real run of `foodtaster_orders_held` on a small batch over hold_rate, triggered through the
    REST API as the UI's trigger form does; the run as the API gives it once finished."""
    import time

    af, log = standalone
    fill_inbox(af.lake, HELD_DATE, dataset=HELD, seed=13, messages=60, **HOLDING)
    api = AirflowApi(af.base_url, "admin", PASSWORD)
    _until(lambda: _parsed(api, HELD_DAG), 180)
    run_id = api.request("POST", f"dags/{HELD_DAG}/dagRuns", json={
        "logical_date": None, "conf": {"batch_date": HELD_DATE}})["dag_run_id"]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        run = api.request("GET", f"dags/{HELD_DAG}/dagRuns/{run_id}")
        if run["state"] in ("success", "failed"):
            tasks = api.task_instances(HELD_DAG, run_id)
            run["tasks"] = {ti["task_id"]: ti["state"] for ti in tasks}
            return run
        time.sleep(2)
    raise AssertionError(f"run {run_id} did not finish\n{log.read_text(errors='replace')[-3000:]}")


def _parsed(api: AirflowApi, dag_id: str) -> bool:
    try:
        return bool(api.dag(dag_id))
    except AirflowApiError:
        return False


def _token(af: LocalAirflow, user: str = "admin", password: str = PASSWORD) -> str:
    answer = requests.post(f"{af.base_url}/auth/token", json={"username": user, "password": password},
                           timeout=30)
    answer.raise_for_status()
    return answer.json()["access_token"]


def test_the_page_is_for_logged_in_users_only(standalone):
    af, _log = standalone
    assert requests.get(f"{af.base_url}/foodtaster/", timeout=30).status_code in (401, 403)
    page = requests.get(f"{af.base_url}/foodtaster/", timeout=30,
                        headers={"Authorization": f"Bearer {_token(af)}"})
    assert page.status_code == 200 and "20261112" in page.text


def test_the_batches_page_and_its_drill_down_in_chromium(standalone, browser_tools, tmp_path):
    af, log = standalone
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with Browser(browser_tools) as browser:
        # the page as the UI shows it (Browse -> Foodtaster batches, in the UI's iframe),
        # after the UI's own login form, as a person signs in
        browser.go(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log)
        frame = _wait(lambda: browser.find_all("iframe"), "the plugin's iframe", log)[0]
        assert browser.script("return arguments[0].src", frame).endswith("/foodtaster/")
        browser.frame(frame)
        _wait(lambda: browser.find_all("tr.batch"), "the batches table in the iframe", log)
        browser.frame(None)
        shot = browser.screenshot(SCREENSHOTS / "batches_page_in_ui.png")
        assert shot.read_bytes().startswith(b"\x89PNG")

        # the page itself: newest batch first, its verdict, rate, top reason, the chart
        browser.go(f"{af.base_url}/foodtaster/")
        rows = [" ".join(browser.text(row).split()) for row in browser.find_all("#dataset-orders tr.batch")]
        assert [row.split()[1] for row in rows] == ["20261112", "20261111", "20261110"]
        assert rows[0].startswith("2026-11-12 20261112 held 400 284 116 0 29.00%"), rows[0]
        assert "80 amount.greater_than(0)" in rows[0]
        heading = browser.text(browser.find("section#dataset-orders h2"))
        assert heading == "orders"
        text = browser.text(browser.find("body"))
        assert "Quarantined by producer: checkout-svc 90, fulfilment-svc 26" in text
        assert "rising (alert_rate 2.00%, hold_rate 20.00%)" in text
        chart = browser.script("const i = document.querySelector('img');"
                               " return [i.complete, i.naturalWidth, i.naturalHeight];")
        assert chart[0] and chart[1] > 400 and chart[2] > 200, chart  # the PNG really loaded
        browser.screenshot(SCREENSHOTS / "batches_page.png")

        # drill down: click the held batch
        browser.click(browser.find('a[href="datasets/orders/batches/20261112"]'))
        _wait(lambda: browser.current_url.endswith("/foodtaster/datasets/orders/batches/20261112"),
              "the drill-down page", log)
        assert browser.text(browser.find("span.verdict")) == "held"
        # reasons by count, the top one's messages shown ten a page
        reasons = [" ".join(browser.text(row).split()) for row in browser.find_all("tr.reason")]
        assert reasons == ["80 amount.greater_than(0)", "36 json.invalid"]
        assert len(browser.find_all("article.sample")) == 10
        assert "messages 1–10 of 80 · page 1 of 8" in browser.text(browser.find("p.pager"))
        browser.click(browser.find("p.pager a"))  # next
        _wait(lambda: "page=2" in browser.current_url, "the second page", log)
        assert "messages 11–20 of 80 · page 2 of 8" in browser.text(browser.find("p.pager"))
        assert browser.text(browser.find("article.sample pre.raw")) == '{"order_id": "o-47", "amount": -47}'
        # another reason: its messages, the raw one shown as text, byte for byte, on the page's width
        browser.click(browser.find('tr.reason a[href="?reason=json.invalid#samples"]'))
        _wait(lambda: "reason=json.invalid" in browser.current_url, "the json.invalid messages", log)
        raw = browser.find("article.sample pre.raw")
        assert browser.text(raw) == HOSTILE_RAW  # not run as markup
        assert browser.script("return arguments[0].getBoundingClientRect().width", raw) > 800
        assert browser.script("return window.pwned === undefined"
                              " && document.querySelectorAll('script').length === 0")
        where = browser.text(browser.find("article.sample h3"))
        assert where == "1. raw/orders/batch_date=2026-11-12/batch_id=20261112/part-1.jsonl:1"
        assert "json.invalid: not strict JSON" in browser.text(browser.find("article.sample .reasons"))
        shot = browser.screenshot(SCREENSHOTS / "batch_drill_down.png")  # for a person to look at
        assert shot.stat().st_size > 10_000


def test_a_real_held_batchs_page_links_its_run_its_data_docs_and_its_alert(standalone, held_run,
                                                                           browser_tools, tmp_path):
    """The drill-down of the real held run's batch, and every link it and its alert carry,
    followed in the browser to a page that exists."""
    af, log = standalone
    run_id = held_run["dag_run_id"]
    with Browser(browser_tools) as browser:
        browser.go(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log)
        page = f"{af.base_url}/foodtaster/datasets/{HELD}/batches/{HELD_ID}"
        browser.go(page)
        verdict = browser.text(browser.find("span.verdict"))
        assert verdict.startswith("held"), verdict
        counts = [int(browser.text(cell)) for cell in browser.find_all("tr.reason td.n")]
        assert counts == sorted(counts, reverse=True) and len(browser.find_all("article.sample")) == min(
            counts[0], 10)
        links = dict(browser.script("return [...document.querySelectorAll('p.links a')]"
                                    ".map(a => [a.className, a.href]);"))
        assert links["run"] == f"{af.base_url}/dags/{HELD_DAG}/runs/{quote(run_id, safe='')}", links
        browser.screenshot(SCREENSHOTS / "held_batch_drill_down.png")

        # the Data Docs: the gate's page, served from the lake, the batch's verdict beside the gate's
        browser.go(links["docs"])
        _wait(lambda: "Batch gate: orders_held" in browser.text(browser.find("body")), "the Data Docs",
              log, browser=browser)
        assert browser.text(browser.find("p.verdict")) == "batch gate: passed"
        assert browser.text(browser.find("p.batch-verdict")).startswith(
            "the batch: held (quarantine rate 35.00%, alert_rate 2.00%, hold_rate 20.00%); the gate passed")
        observed = [browser.text(row) for row in browser.find_all("tbody tr td:nth-child(5)")]
        assert observed and not any(value.startswith(("{", "[", "null")) for value in observed), observed
        browser.screenshot(SCREENSHOTS / "held_batch_data_docs.png")

        # the alert as written into the lake, its chart loaded beside it
        browser.go(links["alert"])
        _wait(lambda: f"{HELD} batch {HELD_ID}" in browser.text(browser.find("body")), "the alert", log,
              browser=browser)
        chart = _wait(lambda: browser.script("const i = document.querySelector('img');"
                                             " return i && i.complete && [i.naturalWidth];"),
                      "the alert's chart", log, browser=browser)
        assert chart[0] > 400, chart  # a broken image has naturalWidth 0
        browser.screenshot(SCREENSHOTS / "held_batch_alert.png")
        alert_links = browser.script("return [...document.querySelectorAll('a')].map(a => a.href);")
        assert alert_links, "the alert carries no link"

        # every link the page and the alert carry opens a page that exists
        for url in [links["run"], *alert_links]:
            browser.go(url)
            _wait(lambda: run_id in browser.text(browser.find("body")), f"{url} showing the run", log,
                  timeout=60, browser=browser)
            shown = browser.text(browser.find("body"))
            assert "not found" not in shown.lower(), (url, shown[:500])
        browser.screenshot(SCREENSHOTS / "held_batch_alert_run_link.png")


def test_every_link_opens_in_the_whole_window_from_inside_airflow(standalone, held_run, browser_tools,
                                                                  tmp_path):
    """Browse -> Foodtaster batches, as a person clicks through it: the pages move inside the
    plugin's frame (the window's address following), and the run links of the batch page and of
    its alert open the run in the whole window, never the UI nested in the frame
    (docs/decisions/019-the-batches-page-as-a-react-app-plugin.md)."""
    af, log = standalone
    run_page = f"{af.base_url}/dags/{HELD_DAG}/runs/{quote(held_run['dag_run_id'], safe='')}"

    def framed(browser: Browser) -> str:
        """Into the plugin's frame, once its page is there; returns the frame element."""
        browser.frame(None)
        frame = _wait(lambda: browser.find_all("iframe"), "the plugin's frame", log, browser=browser)[0]
        browser.frame(frame)
        _wait(lambda: browser.script("return document.readyState === 'complete' && location.href"
                                     " !== 'about:blank'"), "the framed page", log, browser=browser)
        return frame

    def clicked(browser: Browser, css: str, what: str) -> None:
        """A click on the first link `css` selects in the plugin's frame, as a person's."""
        try:
            browser.page.frame_locator("iframe").locator(css).first.click()
        except Exception as err:  # noqa: BLE001 - Playwright's timeout: say what was waited for
            raise AssertionError(_stuck(what, 30, log, browser)) from err

    def in_whole_window(browser: Browser, url: str, what: str) -> None:
        browser.frame(None)
        _wait(lambda: browser.current_url == url, f"{what} in the whole window", log, timeout=60,
              browser=browser)
        _wait(lambda: held_run["dag_run_id"] in browser.text(browser.find("body")), f"{what}: the run",
              log, timeout=60, browser=browser)
        nested = browser.script("return [...document.querySelectorAll('iframe')].map(f => f.src)")
        assert not nested, f"{what}: a frame in the run's page: {nested}"

    with Browser(browser_tools) as browser:
        browser.go(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log)
        frame = framed(browser)
        browser.frame(None)
        sandbox = browser.script("return arguments[0].getAttribute('sandbox')", frame)
        assert "allow-top-navigation-by-user-activation" in sandbox.split(), sandbox
        browser.frame(frame)
        # a batch id: the drill-down, in the frame, the window's address following it
        clicked(browser, f'a[href="datasets/{HELD}/batches/{HELD_ID}"]', "the held batch's link")
        browser.frame(None)
        _wait(lambda: browser.current_url.endswith(f"/plugin/foodtaster/foodtaster/datasets/{HELD}/batches/"
                                                   f"{HELD_ID}"), "the address following the frame", log,
              browser=browser)
        browser.screenshot(SCREENSHOTS / "in_ui_held_batch.png")
        framed(browser)
        clicked(browser, "p.links a.run", "the batch page's run link")
        in_whole_window(browser, run_page, "the batch page's run link")
        browser.screenshot(SCREENSHOTS / "in_ui_run_link.png")

        # the alert, opened from the batch page inside Airflow: its run link too
        browser.back()
        framed(browser)
        clicked(browser, "p.links a.alert", "the batch page's alert link")
        _wait(lambda: f"{HELD} batch {HELD_ID}" in browser.text(browser.find("body")), "the alert", log,
              browser=browser)
        browser.screenshot(SCREENSHOTS / "in_ui_alert.png")
        clicked(browser, f'a[href="{run_page}"]', "the alert's run link")
        in_whole_window(browser, run_page, "the alert's run link")
        browser.screenshot(SCREENSHOTS / "in_ui_alert_run_link.png")


def test_a_person_clicks_through_airflows_frame_and_a_viewer_cannot_run_anything(
        standalone, held_run, browser_tools):
    """As a person does, Playwright reaching into the plugin's frame: log in, open the page from
    the Browse menu, click a batch, a reason, its Data Docs and back. Then a viewer: the DAG's
    Trigger, submitted, answers Airflow's "Access Denied" and makes no run, and the API refuses
    the viewer's trigger, clear and delete of a run."""
    from playwright.sync_api import expect

    af, log = standalone
    run_path = f"dags/{HELD_DAG}/dagRuns/{quote(held_run['dag_run_id'], safe='')}"
    with Browser(browser_tools) as browser:
        page = browser.page
        page.goto(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log)
        page.goto(f"{af.base_url}/")
        page.get_by_role("button", name="Browse").click()
        page.get_by_role("menuitem", name="Foodtaster batches").click()
        frame = page.frame_locator("iframe")
        frame.locator(f'a[href="datasets/{HELD}/batches/{HELD_ID}"]').click()
        expect(frame.locator("span.verdict")).to_have_text(re.compile("^held"))
        fewest = frame.locator("tr.reason a").last  # the reason with the fewest messages
        rule = fewest.inner_text()
        fewest.click()
        expect(frame.locator("tr.reason.shown a")).to_have_text(rule)  # its messages shown
        expect(frame.locator("article.sample .reasons").first).to_contain_text(rule)
        frame.locator("p.links a.docs").click()
        expect(frame.locator("p.verdict")).to_have_text("batch gate: passed")
        browser.screenshot(SCREENSHOTS / "in_ui_data_docs_clicked.png")
        page.go_back()
        expect(frame.locator("span.verdict")).to_have_text(re.compile("^held"))
        browser.screenshot(SCREENSHOTS / "in_ui_back_from_data_docs.png")

        # a viewer's attempt through the UI: the DAG's Trigger, submitted, is refused with
        # Airflow's own words for a 403 (its `errors.forbidden` toast) and makes no run
        admin = AirflowApi(af.base_url, "admin", PASSWORD)
        before = len(admin.dag_runs(HELD_DAG))
        page.context.clear_cookies()
        page.goto(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log, "viewer", user="viewer")
        page.goto(f"{af.base_url}/dags/{HELD_DAG}")
        # the DAG's tasks and its header drawn (a busy machine takes its time)
        expect(page.get_by_text("read_verdict").first).to_be_visible(timeout=60_000)
        trigger = page.get_by_test_id("trigger-dag-button").first
        expect(trigger).to_be_visible(timeout=30_000)
        trigger.click()
        submit = page.get_by_role("dialog").get_by_role("button", name="Trigger")
        expect(submit).to_be_enabled()
        submit.click()
        expect(page.get_by_text("Access Denied").first).to_be_visible(timeout=20_000)
        expect(page.get_by_text("You do not have permission to perform this action.").first).to_be_visible()
        expect(page.get_by_role("dialog")).to_contain_text("403 Forbidden")  # the form says so too
        browser.screenshot(SCREENSHOTS / "viewer_trigger_attempt.png")
        assert len(admin.dag_runs(HELD_DAG)) == before
    # and the API a page would call refuses the viewer's trigger, clear and delete
    viewer = {"Authorization": f"Bearer {_token(af, 'viewer', 'viewer')}"}
    api = f"{af.base_url}/api/v2"
    triggered = requests.post(f"{api}/dags/{HELD_DAG}/dagRuns", json={"logical_date": None}, headers=viewer,
                              timeout=30)
    cleared = requests.post(f"{api}/{run_path}/clear", json={"dry_run": False}, headers=viewer, timeout=30)
    deleted = requests.delete(f"{api}/{run_path}", headers=viewer, timeout=30)
    assert [r.status_code for r in (triggered, cleared, deleted)] == [403] * 3, [
        r.text for r in (triggered, cleared, deleted)]
    assert len(admin.dag_runs(HELD_DAG)) == before
    assert admin.request("GET", run_path)["state"] == held_run["state"]


def test_the_validate_log_shows_the_jobs_lines_first_and_readable(standalone, held_run, browser_tools,
                                                                 tmp_path):
    """The validate task's log as the API serves it to the UI: the job's lines (its events, its
    summary as a sentence) before Spark's, which come folded in one group."""
    af, log = standalone
    api = AirflowApi(af.base_url, "admin", PASSWORD)
    path = f"dags/{HELD_DAG}/dagRuns/{quote(held_run['dag_run_id'], safe='')}/taskInstances/validate"
    events = [e.get("event", "") if isinstance(e, dict) else str(e)
              for e in api.request("GET", f"{path}/logs/1", params={"full_content": True})["content"]]
    submitted = next(i for i, e in enumerate(events) if e.startswith("Spark-Submit cmd"))
    job = [i for i, e in enumerate(events) if e.endswith("(foodtaster.engine.batch.job)")]
    group = next(i for i, e in enumerate(events) if e.startswith("::group::Spark and the JVM: "))
    assert submitted < job[0] < group, events[submitted:group + 2]
    started = events[job[0]]
    assert started.startswith("started: dataset=orders_held batch=20261113 input=") or started.startswith(
        "reference_unchecked: "), started
    summary = next(e for e in events if e.startswith("summary: "))
    assert summary.startswith(f"summary: {HELD} batch {HELD_ID}: 60 messages = 39 valid + 21 quarantined "
                              "+ 0 duplicates dropped; quarantine rate 35.00%; staged"), summary
    assert not any(e.startswith("{") for e in events)  # no raw JSON line
    assert events.index("::endgroup::", group) > group
    with Browser(browser_tools) as browser:
        browser.go(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log)
        browser.go(f"{af.base_url}/{path.replace('dagRuns', 'runs').replace('taskInstances', 'tasks')}")
        _wait(lambda: "summary: " in browser.text(browser.find("body")), "the validate log", log,
              timeout=60, browser=browser)
        browser.screenshot(SCREENSHOTS / "held_run_validate_log.png")


def test_a_held_run_is_red_in_the_dag_list_the_runs_list_and_the_grid(standalone, held_run,
                                                                     browser_tools, tmp_path):
    af, log = standalone
    run_id = held_run["dag_run_id"]
    # only the verdict task failed: the pipeline did its work, the batch waits for a person
    assert held_run["state"] == "failed", held_run
    assert {task for task, state in held_run["tasks"].items() if state != "success"} == {
        "publish", "verdict"}, held_run["tasks"]
    assert held_run["note"].startswith(f"HELD, not published: batch {HELD_ID}, inbox date {HELD_DATE}")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with Browser(browser_tools) as browser:
        browser.go(f"{af.base_url}/plugin/foodtaster")
        _log_in(browser, log)
        # the DAG list: the latest run's badge
        browser.go(f"{af.base_url}/dags")
        badge = _wait(lambda: browser.script(
            "const card = [...document.querySelectorAll('[data-testid=dag-card]')].find(c =>"
            " c.querySelector('[data-testid=dag-id]').textContent.trim() === arguments[0]);"
            " const b = card && card.querySelector('[data-testid=latest-run] [data-testid=state-badge]');"
            " return b && b.getAttribute('aria-label');", HELD_DAG), "the DAG list's latest run", log,
            browser=browser)
        assert badge == "failed"
        browser.screenshot(SCREENSHOTS / "held_run_dag_list.png")
        # the runs list: the run's state, and the grid beside it: the verdict cell is the red one
        browser.go(f"{af.base_url}/dags/{HELD_DAG}/runs")
        state = _wait(lambda: browser.text(browser.find("td[data-testid=table-cell-state]")),
                      "the runs list", log, browser=browser)
        assert state == "Failed"
        # each cell's colour as the screen shows it (the UI's CSS gives oklch(): a canvas says rgb)
        colours = _wait(lambda: browser.script(
            "const rgb = css => { const c = document.createElement('canvas').getContext('2d');"
            " c.fillStyle = css; c.fillRect(0, 0, 1, 1);"
            " return [...c.getImageData(0, 0, 1, 1).data].slice(0, 3); };"
            " const colour = t => { const a = document.getElementById('grid-' + arguments[0] + '-' + t);"
            " const b = a && a.querySelector('[data-testid=task-state-badge]');"
            " return b && rgb(getComputedStyle(b).backgroundColor); };"
            " const all = {verdict: colour('verdict'), ledger: colour('ledger')};"
            " return all.verdict && all.ledger ? all : null;", run_id),
            "the grid's cells", log, browser=browser)
        (red, green) = (colours["verdict"], colours["ledger"])
        assert red[0] > 150 > red[1] and green[1] > green[0], colours
        browser.screenshot(SCREENSHOTS / "held_run_runs_list_and_grid.png")


def test_a_viewer_reads_masked_messages_and_an_admin_the_raw_bytes(standalone, browser_tools, tmp_path):
    """The batch page of planted personal values, logged in through the UI's form as a viewer
    (the embedded default's role that may not read raw payloads), then as an admin: the page's
    source, and the HTTP answer itself, hold none of the planted values for the viewer."""
    af, log = standalone
    page = f"{af.base_url}/foodtaster/datasets/{PII}/batches/{PII_ID}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for user, password in (("viewer", "viewer"), ("admin", PASSWORD)):
        token = _token(af, user, password)
        with Browser(browser_tools) as browser:
            browser.go(f"{af.base_url}/plugin/foodtaster")
            _log_in(browser, log, password, user=user)
            seen = {}
            for reason in ("", "?reason=json.invalid"):
                browser.go(page + reason)
                _wait(lambda: browser.find_all("article.sample"), f"{user}'s samples", log, browser=browser)
                source = browser.script("return document.documentElement.outerHTML")
                answer = requests.get(page + reason, headers={"Authorization": f"Bearer {token}"}, timeout=30)
                seen[reason] = ([browser.text(pre) for pre in browser.find_all("article.sample pre")],
                                browser.text(browser.find("p.access")), source + answer.text)
                browser.screenshot(SCREENSHOTS / f"raw_payloads_{user}{reason and '_json_invalid'}.png")
        shown = [text for texts, _, _ in seen.values() for text in texts]
        notes = {note for _, note, _ in seen.values()}
        sources = "".join(source for _, _, source in seen.values())
        if user == "viewer":
            assert notes == {"masked: personal values hidden; ask an admin or op for raw bytes"}
            assert not any(value in sources for value in PLANTED), [v for v in PLANTED if v in sources]
            assert not any(raw in sources for raw in PII_RAWS)
            assert 'class="raw"' not in sources and "class=raw" not in sources
            assert shown[0].startswith('{"id": "e-1", "data": {"order_id": "o-1", "customer": {"id": '
                                       '"c-00001", "name": "‹personal: text, 15 chars, #'), shown[0]
            assert '"phone": "‹personal: phone, 16 chars, #' in shown[0]
            assert shown[2].startswith("‹not shown: 44 bytes, not JSON, #"), shown[2]
        else:
            assert notes == {"raw bytes: your role may read them"}
            assert shown == PII_RAWS  # the exact bytes, as text


WAY_BACK_S = 30.0  # from the login form's submit to the page asked for


def _log_in(browser: Browser, log: Path, password: str = PASSWORD, user: str = "admin") -> None:
    """Sign in through the UI's own login form, then expect the page asked for.

    The form is drawn by React, and keys typed before it is ready are lost (one CI run on a
    busy machine stayed on the form): Playwright fills each field once it is there and
    editable, and a form still shown after the click is filled once more.
    """
    page = browser.page
    secret = page.locator("input[type=password]")
    for attempt in (1, 2):
        _wait(lambda: secret.count(), "the login form", log, browser=browser)
        page.locator("input:not([type=password])").first.fill(user)
        secret.fill(password)
        page.locator("button[type=submit]").click()
        # the UI may land on the plugin's page or a path under it (once: /plugin/foodtaster/foodtaster/)
        if _until(lambda: "/plugin/foodtaster" in browser.current_url and not secret.count(), WAY_BACK_S):
            return
        if attempt == 2 or not secret.count():
            raise AssertionError(_stuck("the way back after login", WAY_BACK_S, log, browser))


def _until(condition, timeout: float):
    """The condition's first true value within the timeout, else None."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # noqa: BLE001 - the page is still loading: ask again
            value = None
        if value or time.monotonic() >= deadline:
            return value or None
        time.sleep(0.5)


def _wait(condition, what: str, log: Path, timeout: float = 30.0, browser: Browser | None = None):
    value = _until(condition, timeout)
    if not value:
        raise AssertionError(_stuck(what, timeout, log, browser))
    return value


def _stuck(what: str, timeout: float, log: Path, browser: Browser | None) -> str:
    where = ""
    if browser is not None:  # what the page shows says more than Airflow's log
        try:
            where = (f"the browser is at {browser.current_url}, showing:\n"
                     f"{browser.text(browser.find('body'))[:1000]}\n")
        except Exception as error:  # noqa: BLE001 - the timeout is the failure, not what it could not read
            where = f"the browser could not say where it is: {error}\n"
    return (f"timed out after {timeout:.0f}s waiting for {what}\n{where}"
            f"{log.read_text(errors='replace')[-3000:]}")

