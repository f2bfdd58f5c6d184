"""The batches pages rendered from a lake built here: what a person reads, escaped."""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.lake import commit_rows
from test_trend import CONFIG, entry

from foodtaster.ops import lake_files, pages
from foodtaster.state.lake import Lake, write_json, write_text
from foodtaster.state.ledger import record_batch
from foodtaster.state.tables import QUARANTINE

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
        "paths": {"report": "/lake/reports/orders/20261102"},
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
    html = pages.batch_page(lake, DATASETS, "orders", "20261102", show_raw=True)
    assert 'class="verdict held">held<' in html and "<b>30.00%</b>" in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; \\xc3(" in html
    assert "<script>" not in html and "<img src=x>" not in html
    assert "file:/in/part-1.jsonl:7" in html
    assert '<td class=n>40</td><td><a href="?reason=json.invalid#samples">json.invalid</a></td>' in html


def test_a_batch_without_summary_still_shows_its_ledger_record(lake):
    html = pages.batch_page(lake, DATASETS, "orders", "20261101")
    assert 'class="verdict published">published<' in html and "No sample." in html


@pytest.mark.parametrize("dataset, batch_id, message", [
    ("payments", "20261101", "not in the registry"),
    ("orders", "20261199", 'has no batch "20261199"'),
    ("orders", "../etc", '"../etc" is not a batch id'),
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
                                    "part-0.jsonl", "line_number": 4, "raw": "{",
                     "reasons": [{"layer": "parse", "rule": "json.invalid", "message": "not JSON"}]}],
        "paths": {"report": f"file:{root}/reports/orders/20261103"},
        "tables": {"names": {"valid": "orders", "quarantine": "orders_quarantine", "namespace": "foodtaster",
                             "catalog": "foodtaster"}, "branch": "audit-20261103"},
    })
    html = pages.batch_page(lake, DATASETS, "orders", "20261103")
    assert html.index("json.invalid") < html.index("currency.isin") < html.index("amount.ge")
    assert "<th>quarantine rate</th><td class=n>29.20%</td>" in html
    assert "all 146 quarantined of 500 messages" in html
    assert "<th>new quarantine rate</th><td class=n>28.80%</td>" in html
    assert "without the 2 already listed (poison list); alert_rate and hold_rate judge this one" in html
    assert "<li>new quarantine rate 28.80% &gt;= hold_rate 20.00%</li>" in html  # not a Python list
    assert "raw/orders/batch_date=2026-11-03/batch_id=20261103/part-0.jsonl:4" in html
    assert ("quarantine table: <code>foodtaster.orders_quarantine</code>, "
            "<code>batch_id = '20261103'</code>; "
            "valid rows: <code>foodtaster.orders</code> on branch audit-20261103 (not published)") in html
    assert "file:" not in html and root not in html  # no machine path: lake paths are relative


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
            '2026-11-05 10:00 UTC: a &lt;test&gt; feed</span><span class=who>held because: '
            'quarantine rate 30.00% &gt;= hold_rate 20.00%</span></td>') in html
    assert ('<td class="verdict superseded">superseded<span class=who>a corrected delivery replaced 2 '
            'file(s), by bob at 2026-11-06 09:00 UTC: resent without the test orders</span>'
            '<span class=who>then published</span></td>') in html
    assert '<td class="verdict published">published</td>' in html  # a good day says nothing more
    drill = pages.batch_page(lake, DATASETS, "orders", "20261104")
    assert 'class="verdict released">released<' in drill
    assert "<li>released by alice at 2026-11-05 10:00 UTC: a &lt;test&gt; feed</li>" in drill


REASON = pa.struct([("layer", pa.string()), ("rule", pa.string()), ("column", pa.string()),
                    ("message", pa.string()), ("value", pa.string())])


def quarantine(lake: Lake, batch_id: str, day: str, rows: list[tuple[bytes, list[str]]]) -> None:
    """A batch's quarantine as the job writes it: raw bytes, reasons, lineage."""
    commit_rows(lake, "orders", QUARANTINE, day, batch_id, pa.table({
        "_raw": pa.array([raw for raw, _ in rows], pa.binary()),
        "reasons": pa.array([[{"layer": "row", "rule": rule, "column": "x", "message": f"{rule} failed",
                               "value": None} for rule in rules] for _, rules in rows], pa.list_(REASON)),
        "_batch_id": [batch_id] * len(rows),
        "_source_file": [f"{lake.raw('orders', day, batch_id)}/part-0.jsonl"] * len(rows),
        "_line_number": pa.array(range(1, len(rows) + 1), pa.int64()),
        "_ingested_at": ["2026-11-06T00:00:00Z"] * len(rows),
    }))


@pytest.fixture
def drilled(lake) -> Lake:
    """A held batch of a DAG run with 15 messages quarantined for json.invalid (one of them also
    for currency.isin, one not UTF-8), 8 for currency.isin alone; its Data Docs and alert."""
    record_batch(lake, "orders", {**entry("2026-11-06", 100, 23, "held"), "dag_id": "foodtaster_orders",
                                  "run_id": "scheduled__2026-11-06T00:00:00+00:00",
                                  "why": ["quarantine rate 23.00% >= hold_rate 20.00%"]})
    rows = [(b'{"n": %d' % n, ["json.invalid"]) for n in range(1, 14)]
    rows += [(b'{"n": 14, "c": "\xff"', ["json.invalid"]), (b'{"n": 15}', ["json.invalid", "currency.isin"])]
    rows += [(b'{"currency": "eur", "long": "' + b"x" * 5000 + b'"}', ["currency.isin"])] * 8
    quarantine(lake, "20261106", "2026-11-06", rows)
    docs = f"{lake.report('orders', '20261106')}/data_docs"
    write_json(lake.summary("orders", "20261106"), {
        "batch_id": "20261106", "batch_date": "2026-11-06", "messages": 100, "quarantined": 23,
        "reasons": {"currency.isin": 9, "json.invalid": 15}, "paths": {"data_docs": f"{docs}/gate.html"}})
    write_text(f"{docs}/gate.html", "<p>the gate</p>")
    write_text(lake.state("alerts", "orders", "20261106-batch.html"), "<p>the alert</p>")
    return lake


def test_the_drill_down_pages_through_each_reasons_messages_most_messages_first(drilled):
    html = pages.batch_page(drilled, DATASETS, "orders", "20261106", show_raw=True)
    assert html.index(">json.invalid</a>") < html.index(">currency.isin</a>")  # 15 before 9
    assert '<tr class="reason shown"><td class=n>15</td>' in html  # the top reason's messages shown
    assert "messages 1&ndash;10 of 15 &middot; page 1 of 2" in html
    assert '<a href="?reason=json.invalid&amp;page=2#samples">next &rarr;</a>' in html
    assert html.count("<article class=sample") == 10
    assert "raw/orders/batch_date=2026-11-06/batch_id=20261106/part-0.jsonl:1</code>" in html
    assert '<pre class=raw>{&quot;n&quot;: 1</pre>' in html
    second = pages.batch_page(drilled, DATASETS, "orders", "20261106", reason="json.invalid", page=2,
                              show_raw=True)
    assert "messages 11&ndash;15 of 15 &middot; page 2 of 2" in second and "next &rarr;" not in second
    assert '<pre class=raw>{&quot;n&quot;: 14, &quot;c&quot;: &quot;\\xff&quot;</pre>' in second  # not UTF-8
    other = pages.batch_page(drilled, DATASETS, "orders", "20261106", reason="currency.isin", show_raw=True)
    assert other.count("<article class=sample") == 9 and "page 1 of 1" in other
    assert "… 1031 more characters" in other  # a long message is cut, saying by how much
    with pytest.raises(pages.PageNotFound, match="has 2 page"):
        pages.batch_page(drilled, DATASETS, "orders", "20261106", reason="json.invalid", page=3)
    with pytest.raises(pages.PageNotFound, match='no quarantined message with reason "nope"'):
        pages.batch_page(drilled, DATASETS, "orders", "20261106", reason="nope")


def test_without_show_raw_the_drill_down_shows_the_masked_view_and_no_byte_of_a_line(drilled):
    html = pages.batch_page(drilled, DATASETS, "orders", "20261106")
    assert "<b>masked: personal values hidden; ask an admin or op for raw bytes</b>" in html
    assert html.count("<pre class=masked>‹not shown: ") == 10 and "<pre class=raw>" not in html
    assert "&quot;n&quot;" not in html  # lines that are no JSON object: none of their bytes
    whole = pages.batch_page(drilled, DATASETS, "orders", "20261106", reason="currency.isin")
    assert "<pre class=masked>{&quot;n&quot;: 15}</pre>" in whole  # nothing of it is personal
    raw = pages.batch_page(drilled, DATASETS, "orders", "20261106", show_raw=True)
    assert "<b>raw bytes: your role may read them</b>" in raw and "<pre class=masked>" not in raw


def test_a_viewer_reads_no_byte_of_a_line_in_a_reasons_value_either(lake):
    """orders marks nothing personal, so the job keeps a parse reason's value (the line's start)
    as it was: the masked view shows its length and keyed hash, a raw reader the characters."""
    record_batch(lake, "orders", {**entry("2026-11-07", 10, 1, "published")})
    line = b'{"order_id": "secret-start-of-the-line", "amount": 1'
    commit_rows(lake, "orders", QUARANTINE, "2026-11-07", "20261107", pa.table({
        "_raw": pa.array([line], pa.binary()),
        "reasons": pa.array([[
            {"layer": "parse", "rule": "json.invalid", "column": None, "message": "not strict JSON",
             "value": line.decode()[:30]},
            {"layer": "bytes", "rule": "line.nul_byte", "column": None, "message": "a NUL byte",
             "value": "‹not shown: 30 chars of the line, #0123456789ab›"}]], pa.list_(REASON)),
        "_batch_id": ["20261107"], "_line_number": pa.array([1], pa.int64()),
        "_source_file": [f"{lake.raw('orders', '2026-11-07', '20261107')}/part-0.jsonl"],
        "_ingested_at": ["2026-11-07T00:00:00Z"]}))
    write_json(lake.summary("orders", "20261107"), {"batch_id": "20261107", "batch_date": "2026-11-07",
                                                    "reasons": {"json.invalid": 1, "line.nul_byte": 1}})
    masked = pages.batch_page(lake, DATASETS, "orders", "20261107", reason="json.invalid")
    assert "secret" not in masked and "order_id" not in masked
    assert masked.count("value ‹not shown: 30 chars of the line, #") == 2  # the job's mask kept as it is
    raw = pages.batch_page(lake, DATASETS, "orders", "20261107", reason="json.invalid", show_raw=True)
    assert "value {&quot;order_id&quot;: &quot;secret-start-of" in raw


def test_the_drill_down_links_the_airflow_run_the_data_docs_and_the_alert(drilled):
    html = pages.batch_page(drilled, DATASETS, "orders", "20261106")
    assert ('<a class=run target=_top href="../../../../dags/foodtaster_orders/runs/'
            'scheduled__2026-11-06T00%3A00%3A00%2B00%3A00">') in html
    assert '<a class=docs href="20261106/data-docs/gate.html">' in html
    assert '<a class=alert href="../alerts/20261106-batch.html">the batch alert</a>' in html
    gate, media = lake_files.data_docs_file(drilled, DATASETS, "orders", "20261106", "gate.html")
    assert media == "text/html; charset=utf-8" and gate.decode().endswith("</style><p>the gate</p>")
    assert gate.decode().startswith("<nav class=ft-back>")  # the way back, first
    assert lake_files.alert_file(drilled, DATASETS, "orders", "20261106-batch.html")[0] == b"<p>the alert</p>"
    for outside in ("../summary.json", "/etc/passwd", "", "a/../../summary.json"):
        with pytest.raises(pages.PageNotFound):
            lake_files.data_docs_file(drilled, DATASETS, "orders", "20261106", outside)
    for name in ("../ledger.json", "20261106-batch.json", "x/y.html"):
        with pytest.raises(pages.PageNotFound):
            lake_files.alert_file(drilled, DATASETS, "orders", name)
    bare = pages.batch_page(drilled, DATASETS, "orders", "20261101")
    assert "no Airflow run recorded" in bare and "data-docs" not in bare and "class=alert" not in bare


def test_the_gates_page_shows_observed_values_as_text_and_the_batchs_verdict_beside_the_gates(drilled):
    from foodtaster.engine.gate.gate import batch_page as gate_page

    gate = {"suite": "orders", "passed": True, "failed": [], "results": [
        {"expectation": "expect_column_quantile_values_to_be_between_within_error", "column": "amount",
         "success": True, "observed": {"quantiles": [0.5], "values": [84.39]}, "unexpected_percent": None,
         "error": None},
        {"expectation": "expect_column_values_to_be_between", "column": "created_at", "success": True,
         "observed": None, "unexpected_percent": 0.0, "error": None}]}
    written = gate_page(gate, {"expectations": []}, "orders", "20261106", "2026-11-06", [])
    assert "<td>quantile 0.5: 84.39</td>" in written and "<td>—</td>" in written  # not raw JSON
    assert "The gate is one of the checks of the batch&#x27;s verdict" in written  # until served
    docs = f"{drilled.report('orders', '20261106')}/data_docs"
    write_text(f"{docs}/gate.html", written)
    served = lake_files.data_docs_file(drilled, DATASETS, "orders", "20261106", "gate.html")[0].decode()
    assert '<p class="verdict">batch gate: passed</p>' in served
    assert ('<p class="batch-verdict held"><b>the batch: held</b> (quarantine rate 23.00%, alert_rate '
            "2.00%, hold_rate 20.00%); the gate passed, the batch's other checks decided</p>") in served
    assert "<li>quarantine rate 23.00% &gt;= hold_rate 20.00%</li>" in served
    assert "The gate is one of the checks" not in served
