"""The batches pages rendered from a lake built here: what a person reads, escaped."""

from __future__ import annotations

import pytest
from test_trend import CONFIG, entry

from foodtaster.ops import pages
from foodtaster.state.lake import Lake, write_json
from foodtaster.state.ledger import record_batch

HOSTILE = '<script>alert("x")</script> & \\xc3('
DATASETS = {"orders": CONFIG}


@pytest.fixture
def lake(tmp_path) -> Lake:
    the_lake = Lake(str(tmp_path / "lake"))
    record_batch(the_lake, "orders", entry("2026-11-01", 200, 2, top=[["currency.isin", 2]]))
    record_batch(the_lake, "orders", entry("2026-11-02", 200, 60, "held",
                                           top=[["json.invalid", 40], ["<b>rule</b>", 20]]))
    write_json(the_lake.summary("orders", "20261102"), {
        "batch_id": "20261102", "batch_date": "2026-11-02", "messages": 200, "valid": 139,
        "quarantined": 60, "duplicates_dropped": 1, "quarantine_rate": 0.3,
        "verdict": {"publish": False, "severity": "critical"}, "published": False,
        "reasons": {"json.invalid": 40, "<b>rule</b>": 20},
        "samples": [{"source_file": "file:/in/part-1.jsonl", "line_number": 7, "raw": HOSTILE,
                     "reasons": [{"layer": "parse", "rule": "json.invalid", "column": None,
                                  "message": "not JSON", "value": "<img src=x>"}]}],
        "paths": {"quarantine": "/lake/quarantine/orders/batch_date=2026-11-02/batch_id=20261102"},
    })
    return the_lake


def test_the_batches_page_lists_recent_batches_newest_first_with_links_and_chart(lake):
    html = pages.batches_page(lake, DATASETS)
    assert html.index("20261102") < html.index("20261101")  # newest first
    assert 'href="datasets/orders/batches/20261102"' in html
    assert '<td class="verdict held">held</td>' in html and "<td class=n>30.00%</td>" in html
    assert "40&nbsp;&nbsp;json.invalid" in html
    assert "&lt;b&gt;rule&lt;/b&gt;" in html and "<b>rule</b>" not in html
    assert 'src="datasets/orders/trend.png?since=2026-11-01"' in html
    assert "quarantined over the last 2 batches, rising" in html


def test_the_trend_on_the_page_covers_the_batches_shown(lake):
    html = pages.batches_page(lake, DATASETS, limit=1)
    assert "20261101" not in html and 'trend.png?since=2026-11-02"' in html
    assert "30.00% quarantined over the last batch, not rising" in html


def test_the_drill_down_shows_the_final_verdict_reasons_and_escaped_samples(lake):
    html = pages.batch_page(lake, DATASETS, "orders", "20261102")
    assert 'class="verdict held">held<' in html and "<b>30.00%</b>" in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; \\xc3(" in html
    assert "<script>" not in html and "<img src=x>" not in html
    assert "file:/in/part-1.jsonl:7" in html and "<td class=n>40</td><td>json.invalid</td>" in html


def test_a_batch_without_summary_still_shows_its_ledger_record(lake):
    html = pages.batch_page(lake, DATASETS, "orders", "20261101")
    assert 'class="verdict published">published<' in html and "No sample." in html


@pytest.mark.parametrize("dataset, batch_id, message", [
    ("payments", "20261101", "not in the registry"),
    ("orders", "20261199", "has no batch '20261199'"),
    ("orders", "../etc", "must match"),
])
def test_an_unknown_dataset_or_batch_is_not_found_with_what_is_wrong(lake, dataset, batch_id, message):
    with pytest.raises(pages.PageNotFound, match=message):
        pages.batch_page(lake, DATASETS, dataset, batch_id)


def test_the_chart_of_a_date_range(lake):
    assert pages.trend_png(lake, DATASETS, "orders", since="2026-11-02").startswith(b"\x89PNG")


def test_the_drill_down_names_both_rates_sorts_reasons_by_count_and_shows_paths_in_the_lake(lake):
    root = lake.root
    write_json(lake.summary("orders", "20261103"), {
        "batch_id": "20261103", "batch_date": "2026-11-03", "messages": 500, "valid": 353,
        "quarantined": 146, "duplicates_dropped": 1, "quarantine_rate": 0.292, "listed": 2,
        "reasons": {"amount.ge": 3, "json.invalid": 31, "currency.isin": 9},
        "why": ["new quarantine rate 28.80% >= hold_rate 20.00%"],
        "samples": [{"source_file": f"file://{root}/raw/orders/batch_date=2026-11-03/batch_id=20261103/"
                                    "part-0.jsonl", "line_number": 4, "raw": "{", "reasons": []}],
        "paths": {"quarantine": f"file:{root}/quarantine/orders/batch_date=2026-11-03/batch_id=20261103"},
    })
    html = pages.batch_page(lake, DATASETS, "orders", "20261103")
    assert html.index("json.invalid") < html.index("currency.isin") < html.index("amount.ge")
    assert "<th>quarantine rate</th><td class=n>29.20%</td>" in html
    assert "all 146 quarantined of 500 messages" in html
    assert "<th>new quarantine rate</th><td class=n>28.80%</td>" in html
    assert "without the 2 already listed (poison list); alert_rate and hold_rate judge this one" in html
    assert "<li>new quarantine rate 28.80% &gt;= hold_rate 20.00%</li>" in html  # not a Python list
    assert "raw/orders/batch_date=2026-11-03/batch_id=20261103/part-0.jsonl:4" in html
    assert "<code>quarantine/orders/batch_date=2026-11-03/batch_id=20261103</code>" in html
    assert "file:" not in html and html.count(root) == 1  # the root, named once


def test_paths_outside_the_lake_stay_as_written(lake):
    assert pages.in_lake(lake, "s3a://other/x") == "s3a://other/x"
    assert pages.in_lake(lake, f"{lake.root}/raw/a") == "raw/a"


def test_held_released_and_superseded_are_verdicts_of_their_own_with_who_and_why(lake):
    held = {**entry("2026-11-03", 200, 60, "held"), "why": ["quarantine rate 30.00% >= hold_rate 20.00%"]}
    record_batch(lake, "orders", held)
    record_batch(lake, "orders", {
        **entry("2026-11-04", 200, 60), "why": ["rate", "released by alice: a test feed"],
        "held_why": ["quarantine rate 30.00% >= hold_rate 20.00%"],
        "released": {"by": "alice", "why": "a <test> feed", "at": "2026-11-05T10:00:00+00:00"}})
    record_batch(lake, "orders", {
        **entry("2026-11-05", 200, 2), "superseded": {
            "at": "2026-11-06T09:00:00+00:00", "why": "resent without the test orders", "by": "bob",
            "files": [{"name": "part-1.jsonl"}, {"name": "part-2.jsonl"}], "by_files": ["fixed.jsonl"]}})
    html = pages.batches_page(lake, DATASETS)
    assert ('<td class="verdict held">held<span class=who>quarantine rate 30.00% &gt;= hold_rate '
            '20.00%</span></td>') in html
    assert ('<td class="verdict released">released<span class=who>released by alice at '
            '2026-11-05T10:00:00+00:00: a &lt;test&gt; feed</span><span class=who>held because: '
            'quarantine rate 30.00% &gt;= hold_rate 20.00%</span></td>') in html
    assert ('<td class="verdict superseded">superseded<span class=who>a corrected delivery replaced 2 '
            'file(s), by bob at 2026-11-06T09:00:00+00:00: resent without the test orders</span>'
            '<span class=who>then published</span></td>') in html
    assert '<td class="verdict published">published</td>' in html  # a good day says nothing more
    drill = pages.batch_page(lake, DATASETS, "orders", "20261104")
    assert 'class="verdict released">released<' in drill
    assert "<li>released by alice at 2026-11-05T10:00:00+00:00: a &lt;test&gt; feed</li>" in drill
