"""An alert with its trend, as the alert task builds one: a ledger of earlier batches and
their quarantine partitions (with producers) in a lake made here, this batch pending."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from foodtaster.ops import trend, trend_chart
from foodtaster.ops.alerts import Alert, build_batch_alert
from foodtaster.policy import Facts, decide
from foodtaster.registry import DatasetConfig
from foodtaster.state import ledger
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch
from foodtaster.state.tables import QUARANTINE
from support.lake import commit_rows

RUN_URL = ("http://airflow.example.com:8080/dags/foodtaster_orders/runs/"
           "scheduled__2026-11-12T00%3A00%3A00%2B00%3A00")
EARLIER = [("2026-11-08", 400, 2), ("2026-11-09", 400, 6), ("2026-11-10", 400, 12),
           ("2026-11-11", 400, 40)]  # (date, messages, quarantined): a feed getting worse
HELD_DAY, HELD_ID = "2026-11-12", "20261112"


def _quarantine(lake: Lake, day: str, producers: list[str]) -> None:
    commit_rows(lake, "orders", QUARANTINE, day, day.replace("-", ""),
                pa.table({"_raw": pa.array([b"{}"] * len(producers), pa.binary()),
                          "producer": pa.array(producers, pa.string())}))


def held_summary() -> dict[str, Any]:
    messages, quarantined = 400, 116
    return {
        "dataset": "orders", "batch_id": HELD_ID, "batch_date": HELD_DAY, "messages": messages,
        "valid": messages - quarantined, "quarantined": quarantined, "duplicates_dropped": 0,
        "quarantine_rate": quarantined / messages,
        "reasons": {"amount.greater_than_or_equal_to(0)": 80, "json.invalid": 36},
        "samples": [{"source_file": "file:/lake/raw/orders/batch_date=2026-11-12/part-1.jsonl",
                     "line_number": 7, "raw": '{"amount": -3, "note": "<b>x</b>"}',
                     "reasons": [{"layer": "contract", "rule": "amount.greater_than_or_equal_to(0)",
                                  "column": "amount", "message": "amount must be >= 0",
                                  "value": "-3"}]}],
        "gate": {"passed": True, "failed": []},
        "paths": {"report": f"/lake/reports/orders/{HELD_ID}"},
    }


def held_alert_with_trend(root: str, config: DatasetConfig) -> tuple[Alert, trend.Trend]:
    """The held batch's alert, its trend drawn by trend_chart.render_trend as the task does."""
    lake = Lake(root)
    for day, messages, quarantined in EARLIER:
        record_batch(lake, "orders", {
            "batch_id": day.replace("-", ""), "batch_date": day, "messages": messages,
            "valid": messages - quarantined, "quarantined": quarantined,
            "duplicates_dropped": 0, "quarantine_rate": quarantined / messages,
            "verdict": "published", "severity": "warning", "why": [], "timings": {},
            "top_reasons": [["json.invalid", quarantined]]})
        _quarantine(lake, day, ["checkout-svc"] * (quarantined // 2)
                    + ["fulfilment-svc"] * (quarantined - quarantined // 2))
    summary = held_summary()
    _quarantine(lake, HELD_DAY, ["fulfilment-svc"] * 100 + ["loyalty-svc"] * 16)
    verdict = decide(Facts.of_summary(summary), config)
    found = trend.dataset_trend(lake, config, until=HELD_DAY,
                                pending=ledger.pending_entry(summary, verdict.publish))
    alert = build_batch_alert(summary, verdict, config, {}, trend=found,
                              chart_png=trend_chart.render_trend(found), run_url=RUN_URL,
                              producers=trend.producers_ranked(lake, "orders", [(HELD_DAY, HELD_ID)]))
    return alert, found
