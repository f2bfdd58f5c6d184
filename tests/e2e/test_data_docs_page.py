"""What a person sees of a GX Data Docs page the batches page serves: in chromium, under the
plugin's own policy for lake pages (no script, nothing from a CDN), the page laid out, its
"Failed Only" filter and "Show more info..." working, and a bar leading back. No Airflow: the
page is served as the plugin serves it (`lake_files.data_docs_file`, `LAKE_PAGE_POLICY`)."""

from __future__ import annotations

from pathlib import Path

from support.browser import Browser, chromium_binary
from support.environment import need

from foodtaster.ops import lake_files
from foodtaster.registry import PROJECT_ROOT, DatasetConfig
from foodtaster.state.lake import Lake, write_json, write_text

GX_PAGE = Path(__file__).parents[1] / "unit" / "gx_validation_page.html"
BASE = "http://foodtaster.test/foodtaster/datasets/orders/batches/20261106/data-docs/"
PAGE = "validations/orders/20261106/20261106T010000Z/foodtaster-orders.html"
SCREENSHOTS = PROJECT_ROOT / "data" / "screenshots"
CONFIG = DatasetConfig(name="orders", contract="contracts.orders:Orders",
                       expectation_suite="expectations/orders.json")


def test_gx_data_docs_are_whole_without_script_or_network_with_a_way_back(tmp_path):
    from playwright.sync_api import expect

    chromium = chromium_binary()
    need(chromium is not None, "Debian's chromium is not installed (make browser-tools installs it)")
    lake = Lake(str(tmp_path / "lake"))
    docs = f"{lake.report('orders', '20261106')}/data_docs"
    write_json(lake.summary("orders", "20261106"), {"batch_id": "20261106", "batch_date": "2026-11-06",
                                                    "paths": {"data_docs": f"{docs}/gate.html"}})
    write_text(f"{docs}/{PAGE}", GX_PAGE.read_text(encoding="utf-8"))
    fetched = []

    def serve(route):  # as the plugin answers: the page, under its policy; anything else refused
        url = route.request.url
        fetched.append(url)
        if not url.startswith(BASE):
            return route.abort()
        content, media = lake_files.data_docs_file(lake, {"orders": CONFIG}, "orders", "20261106",
                                                   url.removeprefix(BASE))
        return route.fulfill(body=content, content_type=media,
                             headers={"Content-Security-Policy": lake_files.LAKE_PAGE_POLICY})

    with Browser(chromium) as browser:
        page = browser.page
        page.route("**/*", serve)
        page.goto(BASE + PAGE)
        back = page.locator("nav.ft-back a.ft-batch")
        expect(back).to_have_text("← batch 20261106 of orders")
        browser.screenshot(SCREENSHOTS / "gx_data_docs_top.png")
        assert back.evaluate("a => a.href") == "http://foodtaster.test/foodtaster/datasets/orders/batches/20261106"
        assert page.locator("nav.ft-back a.ft-batches").evaluate("a => a.href") == "http://foodtaster.test/foodtaster/"
        # laid out: the sidebar beside the results, not above them
        sidebar = page.locator("div.col-md-2").first.bounding_box()
        results = page.locator("div.col-md-10").first.bounding_box()
        assert sidebar and results and results["x"] > sidebar["x"] + sidebar["width"] - 1, (sidebar, results)
        passed = page.locator("#section-2-content-block-2-cell-1-1")
        failed = page.locator("#section-5-content-block-2-cell-1-1")
        icon = passed.locator("i.fa-check-circle")  # Font Awesome's, from no CDN: a mark and a word
        assert icon.evaluate("i => getComputedStyle(i, '::before').content") == '"✓ passed"'
        page.get_by_text("Failed Only").click()
        expect(passed).to_be_hidden()
        expect(failed).to_be_visible()
        page.get_by_text("Show All").click()
        expect(passed).to_be_visible()
        more = page.get_by_text("Show more info...").first
        panel = page.locator(f"[id='{more.get_attribute('href').removeprefix('#')}']")
        expect(panel).to_be_hidden()
        more.click()
        expect(panel).to_be_visible()
        browser.screenshot(SCREENSHOTS / "gx_data_docs_whole.png")
    assert all(url.startswith(BASE) for url in fetched), fetched  # no CDN asked for
