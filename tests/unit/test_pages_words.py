"""The batches page in plain words: refused runs listed with their reasons, listed messages a
fact and not a hold reason, an unknown producer explained, no repr and no machine path."""

from __future__ import annotations

import re

from test_trend import CONFIG, entry, quarantine

from foodtaster.ops import pages
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch
from foodtaster.state.refusals import Refusal, record_refusal, refusals

DATASETS = {"orders": CONFIG}


def test_refused_runs_are_listed_with_why_their_run_and_their_alert(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    record_batch(lake, "orders", entry("2026-11-01", 200, 2))
    refused = Refusal("20261199", None, "land", "batch 20261199 of orders was never landed",
                      "foodtaster_orders_reprocess", "manual__2026-11-27T03:54:01+00:00")
    record_refusal(lake, "orders", refused)
    assert [r.batch_id for r in refusals(lake, "orders")] == ["20261199"]
    html = pages.batches_page(lake, DATASETS)
    row = html[html.index("<tr class=refusal>"):]
    assert "refused<span class=who>batch 20261199 of orders was never landed</span>" in row
    assert ('<a class=run target=_top href="../dags/foodtaster_orders_reprocess/runs/'
            'manual__2026-11-27T03%3A54%3A01%2B00%3A00">') in row
    assert 'href="datasets/orders/alerts/20261199-refused.html">alert</a>' in row


def test_listed_messages_are_a_fact_and_an_unknown_producer_is_explained(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    held = entry("2026-11-02", 200, 60, "held")
    held["why"] = ["new quarantine rate 29.00% >= hold_rate 20.00%",
                   "2 of 60 quarantined messages were already listed"]
    record_batch(lake, "orders", held)
    quarantine(lake, "2026-11-02", ["shop", None])
    html = pages.batches_page(lake, DATASETS)
    assert "<span class=who>new quarantine rate 29.00% &gt;= hold_rate 20.00%</span>" in html
    assert "<span class=who>also: 2 of 60 quarantined messages were already listed</span>" in html
    assert "(unknown): messages whose producer could not be read" in html
    for page in (html, pages.batch_page(lake, DATASETS, "orders", "20261102")):
        assert not re.search(r"\{'|\['|" + re.escape(str(tmp_path)), page)
