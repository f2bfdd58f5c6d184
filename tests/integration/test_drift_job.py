"""Drift through the job: real batches of `order_events` (producer: `source`) in which one
producer starts sending a field the contract does not name in 12% of the messages.

Two batches, each run once (gate off: drift rides the pass, not the gate), then a rerun of the
first: the drift record has each path's count, share, producer and first batch; the alert's
"New in this batch" block comes once, not on the next batch; a new field over
`drift_page_share` pages (the alert written by the file channel) though the quarantine rate is
under alert_rate; an optional object that came in the batch before (drift_window 1) and stops
is reported; a
rerun counts once; the CLI, the pages and the trend's producers read the same record. Nothing
shown holds a value of a message.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.state.drift import DriftLog
from foodtaster.state.lake import Lake, new_run_id

DATASET = "order_events"
LOYALTY, DISCOUNT, ADDRESS = "data.customer.loyalty", "data.lines[].discount", "data.customer.address"
CHECKOUT, CRM = "/shop/checkout", "/shop/crm"
SECRET = "gold-tier-7f3a"  # a value no drift view may show


def _event(n: int, source: str, *, loyalty: bool = False, discounts: bool = False, address: bool = True,
           qty: int = 1) -> bytes:
    extra = f',"discount":{{"pct":10,"code":"{SECRET}"}}' if discounts else ""
    lines = ",".join(f'{{"sku":"SKU-{i:05d}","qty":{qty},"price":2.5{extra}}}' for i in range(2))
    where = ',"address":{"street":"1 Main St","zip":"10115","country":"DE"}' if address else ""
    tier = f',"loyalty":{{"tier":"{SECRET}"}}' if loyalty else ""
    return (f'{{"specversion":"1.0","id":"ev-{n}","source":"{source}","type":"com.shop.order.paid",'
            f'"time":"2026-11-20T10:00:00Z","data":{{"order_id":"o-{n}","customer":{{"id":"c-00042",'
            f'"email":"ana@example.com"{where}{tier}}},"lines":[{lines}],"total":12.50,'
            f'"delivery_date":"2026-11-25"}}}}').encode()


def _batches() -> dict[str, tuple[str, list[bytes]]]:
    """b2: 75 messages from checkout (3 with a discount on both lines), 25 from crm, 12 of them
    with the loyalty object. b3: no address any more; crm keeps its loyalty; one poison message
    (qty 0) from crm, 1 of 61, under order_events' alert_rate of 2%."""
    b2 = ([_event(100 + n, CHECKOUT, discounts=n < 3) for n in range(75)]
          + [_event(200 + n, CRM, loyalty=n < 12) for n in range(25)])
    b3 = ([_event(300 + n, CHECKOUT, address=False) for n in range(48)]
          + [_event(400 + n, CRM, loyalty=True, address=False) for n in range(12)]
          + [_event(500, CRM, address=False, qty=0)])
    return {"b2": ("2026-11-21", b2), "b3": ("2026-11-22", b3)}


@pytest.fixture(scope="module")
def drifted(spark, tmp_path_factory):
    """The two batches run in order, then b2 again; each summary as its run wrote it."""
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    config = dataclasses.replace(get_dataset(DATASET), drift_page_share=0.05, drift_window=1)
    summaries, runs = {}, {}
    for batch_id, (day, lines) in _batches().items():
        folder = tmp_path_factory.mktemp(f"in-{batch_id}")
        (folder / "part-0.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
        runs[batch_id] = BatchRun(config=config, input_path=str(folder), lake=lake, batch_id=batch_id,
                                  batch_date=day, gate=False)
        summaries[batch_id] = run_batch(spark, runs[batch_id]).to_json()
    events_before_rerun = len(DriftLog(lake, DATASET).log.events())
    rerun = run_batch(spark, dataclasses.replace(runs["b2"], run_id=new_run_id())).to_json()
    return {"lake": lake, "config": config, "summaries": summaries, "rerun": rerun,
            "events_before_rerun": events_before_rerun}


def _paths(summary: dict) -> dict[tuple[str, str], dict]:
    return {(p["pattern"], p["producer"]): p for p in summary["drift"]["paths"]}


def test_every_message_is_accounted_for(drifted):
    for summary in [*drifted["summaries"].values(), drifted["rerun"]]:
        counted = summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
        assert summary["messages"] == counted
    assert drifted["summaries"]["b3"]["quarantined"] == 1


def test_a_field_one_producer_adds_is_recorded_with_its_count_share_and_first_batch(drifted):
    b2 = drifted["summaries"]["b2"]
    assert b2["drift"]["messages"] == 100
    paths = _paths(b2)
    loyalty = paths[(LOYALTY, CRM)]
    assert (loyalty["messages"], loyalty["share"], loyalty["producer_messages"]) == (12, 0.12, 25)
    assert loyalty["first_seen"] == "b2" and loyalty["new"]
    # an element's field counts each message once, whatever the elements carrying it
    assert paths[(DISCOUNT, CHECKOUT)]["messages"] == 3
    assert set(paths) == {(LOYALTY, CRM), (DISCOUNT, CHECKOUT)}
    recorded = {b.batch_id: b for b in DriftLog(drifted["lake"], DATASET).batches()}
    assert recorded["b2"].producers == {CHECKOUT: 75, CRM: 25}
    assert recorded["b2"].optional[ADDRESS] == 100 and recorded["b3"].optional[ADDRESS] == 0


def test_a_new_field_over_the_page_share_pages_and_only_once(drifted):
    b2, b3 = drifted["summaries"]["b2"], drifted["summaries"]["b3"]
    assert b2["quarantine_rate"] < drifted["config"].alert_rate
    assert b2["verdict"]["alert"] and b2["verdict"]["publish"] and b2["verdict"]["severity"] == "warning"
    assert any(LOYALTY in why and "drift_page_share" in why for why in b2["verdict"]["why"])
    # new too, but in 3% of the messages: under the page share, no page line
    assert _paths(b2)[(DISCOUNT, CHECKOUT)]["new"]
    assert not any(DISCOUNT in why for why in b2["verdict"]["why"])
    # b3: loyalty in 12 of 61 messages (20%), but first seen in b2: not new, no page
    assert not b3["verdict"]["alert"] and _paths(b3)[(LOYALTY, CRM)]["first_seen"] == "b2"
    assert not _paths(b3)[(LOYALTY, CRM)]["new"]


def test_the_alert_says_what_is_new_once_and_what_stopped(drifted):
    from foodtaster.ops.alerts import build_batch_alert, write_alert_file
    from foodtaster.policy import Verdict

    lake, config = drifted["lake"], drifted["config"]
    b2, b3 = drifted["summaries"]["b2"], drifted["summaries"]["b3"]
    alert = build_batch_alert(b2, Verdict.from_json(b2["verdict"]), config, {}, lake=lake)
    page = write_alert_file(lake, alert)  # the file channel: the alert as a page, its fields beside it
    written = json.loads(Path(page.removesuffix(".html") + ".json").read_text())
    assert "New in this batch" in written["text"] and LOYALTY in written["text"]
    assert CRM in written["text"] and "12.00%" in written["text"]
    assert "(under alert_rate 2.00%) — WARNING" in alert.subject  # the rate did not send it
    assert "New in this batch" in alert.html and any("New in this batch" in s for s in alert.slack_sections)
    later = build_batch_alert(b3, Verdict.from_json(b3["verdict"]), config, {}, lake=lake)
    assert "New in this batch" not in later.text
    assert b3["drift"]["stopped"] == [ADDRESS] and "Stopped coming" in later.text and ADDRESS in later.text
    for text in (alert.text, alert.html, later.text):
        assert SECRET not in text


def test_a_rerun_counts_once(drifted):
    log = DriftLog(drifted["lake"], DATASET)
    assert len(log.log.events()) == drifted["events_before_rerun"] + 1
    batches = log.batches()
    assert [b.batch_id for b in batches] == ["b2", "b3"]
    assert {(p.pattern, p.messages) for p in batches[0].paths} == {(LOYALTY, 12), (DISCOUNT, 3)}
    assert batches[0].producers == {CHECKOUT: 75, CRM: 25}
    assert _paths(drifted["rerun"])[(LOYALTY, CRM)]["new"]  # the rerun reports what the first run did


def test_the_cli_pages_and_trend_read_the_record(drifted, capsys):
    from foodtaster.ops import pages
    from foodtaster.ops.cli import main
    from foodtaster.ops.trend import producers_ranked

    lake, config = drifted["lake"], drifted["config"]
    assert main(["drift", DATASET, "--since", "2026-11-21", "--lake", lake.root]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(LOYALTY))
    assert row.split() == [LOYALTY, CRM, "24", "14.91%", "b2", "b3"]  # 12 + 12 of 161 messages
    assert "Stopped coming in batch b3" in out and ADDRESS in out and SECRET not in out
    assert main(["drift", DATASET, "--since", "2026-13-01", "--lake", lake.root]) == 2
    batch = pages.batch_page(lake, {DATASET: config}, DATASET, "b2")
    assert LOYALTY in batch and "NEW" in batch and SECRET not in batch
    listing = pages.batches_page(lake, {DATASET: config})
    assert "Drift: fields the contract does not name" in listing and LOYALTY in listing
    assert producers_ranked(lake, DATASET, [("2026-11-22", "b3")], config.producer) == ((CRM, 1),)
