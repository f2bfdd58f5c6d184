"""An alert shows a viewer no byte of a line that is no JSON object, in a dataset with nothing
personal too: its files are served to every logged-in user by the batches page. The summary's
samples carry the masks the batch page shows a viewer, from the same function and key."""

from __future__ import annotations

import json

from test_trend import CONFIG

from foodtaster import privacy
from foodtaster.engine.batch import accounting
from foodtaster.ops import lake_files
from foodtaster.ops.alerts import build_batch_alert, write_alert_file
from foodtaster.ops.page_samples import sample_view
from foodtaster.policy import Facts, decide
from foodtaster.state.lake import Lake

LINE = b"order 42 for secret-start@example.com, not JSON at all " * 8  # 440 bytes
OBJECT = b'{"order_id": "o-7", "amount": "twelve"}'


def test_an_alert_shows_a_line_that_is_no_json_object_as_the_page_masks_it(tmp_path, monkeypatch):
    monkeypatch.delenv(privacy.KEY_ENV, raising=False)
    lake = Lake(str(tmp_path / "lake"))
    masker = privacy.Masker.for_readers(CONFIG, lake.root)
    assert not masker.paths and masker.key  # orders marks nothing personal; its masks are keyed
    start = LINE.decode()[:200]
    samples = [
        accounting.sample(f"{lake.raw('orders', '2026-11-20', '20261120')}/part-0.jsonl", 3, LINE,
                          [{"layer": "parse", "rule": "json.invalid", "column": None,
                            "message": "not JSON", "value": start}], masker),
        accounting.sample(f"{lake.raw('orders', '2026-11-20', '20261120')}/part-0.jsonl", 4, OBJECT,
                          [{"layer": "contract", "rule": "amount.type", "column": "amount",
                            "message": "not a number", "value": '"twelve"'}], masker),
    ]
    summary = {"dataset": "orders", "batch_id": "20261120", "batch_date": "2026-11-20",
               "messages": 10, "valid": 8, "quarantined": 2, "duplicates_dropped": 0,
               "quarantine_rate": 0.2, "reasons": {"json.invalid": 1, "amount.type": 1},
               "gate": {"passed": True, "failed": []}, "samples": samples}
    alert = build_batch_alert(summary, decide(Facts.of_summary(summary), CONFIG), CONFIG, {}, lake=lake)
    written = write_alert_file(lake, alert)
    served = lake_files.alert_file(lake, {"orders": CONFIG}, "orders", written.rsplit("/", 1)[-1])[0].decode()
    with open(written.removeprefix("file://").replace(".html", ".json"), encoding="utf-8") as kept:
        document = kept.read()
    slack = json.dumps(alert.slack_payload(), ensure_ascii=False)

    # The masks a viewer reads on the batch page, for this line and its reason's value.
    viewer = sample_view(lake, CONFIG, show_raw=False)
    line_mask = viewer.message(LINE)
    value_mask = viewer.reason_value({"layer": "parse", "value": start})
    assert line_mask.startswith("‹not shown: 440 bytes, not JSON, #")
    assert value_mask.startswith("‹not shown: 200 chars of the line, #")
    kept_json = json.dumps(json.loads(document), ensure_ascii=False)  # every field, the Slack payload's
    assert "secret" not in document
    for shown in (served, kept_json, alert.text, slack):
        assert "secret" not in shown and "order 42" not in shown
        assert line_mask in shown and value_mask in shown  # one line, one mask, everywhere
    # A JSON object in a dataset with nothing personal is shown as it came.
    assert samples[1]["raw"] == OBJECT.decode() and samples[1]["reasons"][0]["value"] == '"twelve"'
    # A value masked already (by the job, or by an earlier reader) keeps its mask.
    assert masker.reason_value({"layer": "parse", "value": value_mask}) == value_mask
