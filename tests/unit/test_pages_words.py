"""The batches page in plain words: refused runs listed with their reasons, listed messages a
fact and not a hold reason, an unknown producer explained, no repr and no machine path."""

from __future__ import annotations

import re

from test_trend import CONFIG, entry, quarantine

from foodtaster.ops import pages
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch
from foodtaster.state.refusals import Refusal, alert_stem, record_refusal, refusals

DATASETS = {"orders": CONFIG}


def test_refused_runs_are_listed_with_why_their_run_and_their_alert(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    record_batch(lake, "orders", entry("2026-11-01", 200, 2))
    run_id = "manual__2026-11-27T03:54:01+00:00"
    refused = Refusal(None, None, "land", "batch 20261199 of orders was never landed",
                      "foodtaster_orders_reprocess", run_id)
    record_refusal(lake, "orders", refused)
    assert [r.batch_id for r in refusals(lake, "orders")] == [None]
    html = pages.batches_page(lake, DATASETS)
    row = html[html.index("<tr class=refusal>"):]
    assert "<td><span class=muted>none landed</span></td><td>land</td>" in row
    assert "refused<span class=who>batch 20261199 of orders was never landed</span>" in row
    assert ('<a class=run target=_top href="../dags/foodtaster_orders_reprocess/runs/'
            'manual__2026-11-27T03%3A54%3A01%2B00%3A00">') in row
    stem = alert_stem(run_id)
    assert stem.startswith("refused-manual__2026-11-27T03_54_01_00_00-")
    assert f'href="datasets/orders/alerts/{stem}.html">alert</a>' in row
    assert alert_stem("manual__2026-11-27T03:54:01-00:00") != stem  # one alert a run


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


def test_an_alert_names_lake_paths_relative_to_the_lake_in_one_form():
    from foodtaster.ops.alerts import build_batch_alert
    from foodtaster.policy import Facts, decide

    root = "/srv/lake"
    document = {
        "dataset": "orders", "batch_id": "20261120", "batch_date": "2026-11-20", "messages": 100,
        "valid": 70, "quarantined": 30, "duplicates_dropped": 0, "quarantine_rate": 0.3,
        "reasons": {"json.invalid": 30}, "gate": {"passed": True, "failed": []},
        "samples": [{"source_file": f"file://{root}/raw/orders/part-1.jsonl", "line_number": 2, "raw": "x",
                     "reasons": []},
                    {"source_file": f"file:{root}/raw/orders/part-2.jsonl", "line_number": 3, "raw": "y",
                     "reasons": []}],
        "paths": {"quarantine": f"{root}/quarantine/orders/batch_date=2026-11-20/batch_id=20261120"},
    }
    alert = build_batch_alert(document, decide(Facts.of_summary(document), CONFIG), CONFIG, {},
                              lake=Lake(root), producers=[("(unknown)", 20), ("shop", 10)])
    for text in (alert.text, alert.html):
        assert root not in text and "file:" not in text
        assert "raw/orders/part-1.jsonl line 2" in text and "raw/orders/part-2.jsonl line 3" in text
        assert "quarantine/orders/batch_date=2026-11-20/batch_id=20261120" in text
        assert "(unknown) no readable producer field" in text
