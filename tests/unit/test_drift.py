"""Drift without Spark: the log's fold (reruns counted once, any order), a batch's report
against its history (share, first seen, new once, fields that stopped coming), the page
threshold in the verdict, the range the CLI shows, and the registry keys refused by name."""

from __future__ import annotations

import dataclasses

import pytest

from foodtaster import drift
from foodtaster.drift import BatchDrift, PathCount
from foodtaster.policy import WARNING, Facts, decide
from foodtaster.registry import RegistryError, get_dataset, load_registry
from foodtaster.state.drift import DriftLog
from foodtaster.state.lake import Lake

LOYALTY = "data.customer.loyalty"


def _batch(batch_id: str, day: str, loyalty: int = 0, address: int = 10, messages: int = 100) -> BatchDrift:
    paths = (PathCount(LOYALTY, "/shop/crm", loyalty),) if loyalty else ()
    return BatchDrift(batch_id, day, messages, {"/shop/checkout": messages - 25, "/shop/crm": 25}, paths,
                      {"data.customer.address": address, "data.tags": 0})


def test_a_rerun_replaces_its_batch_whatever_the_order(tmp_path):
    log = DriftLog(Lake(str(tmp_path)), "order_events")
    log.record(_batch("b1", "2026-11-20"))
    log.record(_batch("b2", "2026-11-21", loyalty=12))
    log.record(_batch("b2", "2026-11-21", loyalty=13))  # the rerun, counted once
    batches = log.batches()
    assert [b.batch_id for b in batches] == ["b1", "b2"]
    assert batches[1].paths == (PathCount(LOYALTY, "/shop/crm", 13),)
    events = log.log.events()
    reversed_state = drift.initial()
    for event in reversed(events):  # written at once: any order folds to the same state
        reversed_state = drift.fold(reversed_state, event)
    assert drift.history(reversed_state) == batches
    assert log.compact() is not None and log.batches() == batches


def test_the_log_takes_a_snapshot_as_it_grows(tmp_path, monkeypatch):
    from foodtaster.state import drift as drift_log

    monkeypatch.setattr(drift_log, "COMPACT_AFTER", 3)
    log = DriftLog(Lake(str(tmp_path)), "order_events")
    for day in range(1, 5):
        log.record(_batch(f"b{day}", f"2026-11-0{day}"))
    folded = log.log.fold(drift.fold, drift.initial)
    assert folded.snapshot is not None and folded.unsnapshotted == 1
    assert [b.batch_id for b in log.batches()] == ["b1", "b2", "b3", "b4"]


def test_a_new_path_is_new_in_its_first_batch_only():
    b1, b2, b3 = _batch("b1", "2026-11-20"), _batch("b2", "2026-11-21", 12), _batch("b3", "2026-11-22", 7)
    first = drift.report(b2, [b1, b2, b3], window=3)  # later batches and itself are left out
    (path,) = first.paths
    assert (path.pattern, path.producer, path.messages, path.share) == (LOYALTY, "/shop/crm", 12, 0.12)
    assert path.first_seen == "b2" and path.new and path.producer_messages == 25
    assert path.producer_share == pytest.approx(0.48)
    assert first.new == first.paths
    later = drift.report(b3, [b1, b2, b3], window=3)
    assert later.paths[0].first_seen == "b2" and not later.new
    assert drift.DriftReport.from_json(first.to_json()) == first


def test_an_optional_field_that_stops_coming_is_reported():
    b1, b2 = _batch("b1", "2026-11-20"), _batch("b2", "2026-11-21")
    gone = _batch("b3", "2026-11-22", address=0)
    assert drift.report(gone, [b1, b2], window=2).stopped == ("data.customer.address",)
    # data.tags came in no batch: nothing stopped; one batch before without it: not reported
    assert drift.report(gone, [dataclasses.replace(b1, optional={"data.customer.address": 0}), b2],
                        window=2).stopped == ()
    assert drift.report(gone, [], window=2).stopped == ()  # the first batch has no history
    empty = dataclasses.replace(gone, messages=0, producers={})
    assert drift.report(empty, [b1, b2], window=2).stopped == ()
    # the batch after: its window holds the batch without the field, so it is said once
    assert drift.report(_batch("b4", "2026-11-23", address=0), [b1, b2, gone], window=2).stopped == ()


def test_a_new_path_over_the_page_share_makes_the_batch_alert():
    config = dataclasses.replace(get_dataset("order_events"), drift_page_share=0.05)
    report = drift.report(_batch("b2", "2026-11-21", 12), [_batch("b1", "2026-11-20")], window=3)
    crossed = drift.crossing(report, config.drift_page_share)
    assert [p.pattern for p in crossed] == [LOYALTY]
    assert drift.crossing(report, 0.2) == () and drift.crossing(report, None) == ()
    why = tuple(drift.page_why(p, 0.05) for p in crossed)
    verdict = decide(Facts(messages=100, quarantine_rate=0.0, drift_pages=why), config)
    assert verdict.alert and verdict.publish and verdict.severity == WARNING
    assert LOYALTY in verdict.why[-1] and "drift_page_share 5.00%" in verdict.why[-1]
    assert not decide(Facts(messages=100, quarantine_rate=0.0), config).alert


def test_the_range_counts_every_batch_from_its_date():
    batches = [_batch("b1", "2026-11-20", 5), _batch("b2", "2026-11-21", 12), _batch("b3", "2026-11-22", 7)]
    rows, messages = drift.over_range(batches, since="2026-11-21")
    assert messages == 200
    (row,) = rows
    assert (row.messages, row.share, row.first_seen, row.last_seen) == (19, 0.095, "b1", "b3")


@pytest.mark.parametrize(("entry", "message"), [
    ("producer: 'lines[0]'", "producer must be a path through objects"),
    ("producer: 'a..b'", "producer 'a..b' is no path"),
    ("drift_page_share: 0", "drift_page_share must be a share"),
    ("drift_page_share: high", "drift_page_share must be a share"),
    ("drift_window: 0", "drift_window must be an integer >= 1"),
])
def test_the_drift_keys_are_refused_by_name(tmp_path, entry, message):
    path = tmp_path / "pipeline.yaml"
    path.write_text(f"datasets: {{o: {{contract: a:b, expectation_suite: x, {entry}}}}}")
    with pytest.raises(RegistryError, match=message):
        load_registry(path)


def test_the_registry_names_each_dataset_s_producer():
    assert get_dataset("order_events").producer == "source"
    orders = get_dataset("orders")
    assert orders.producer == "producer" and orders.drift_window == 3 and orders.drift_page_share is None


def test_the_trend_counts_the_new_fields_of_each_batch(tmp_path):
    from foodtaster.ops.trend import BatchRate, _new_fields

    lake = Lake(str(tmp_path))
    log = DriftLog(lake, "order_events")
    for batch in (_batch("b1", "2026-11-20"), _batch("b2", "2026-11-21", 12), _batch("b3", "2026-11-22", 9)):
        log.record(batch)
    rates = [BatchRate(b, d, "published", 100, 0, 0.0, ()) for b, d in
             (("b2", "2026-11-21"), ("b3", "2026-11-22"), ("b4", "2026-11-23"))]
    assert _new_fields(log.batches(), rates) == (("b2", 1), ("b3", 0), ("b4", 0))
