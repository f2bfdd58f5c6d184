"""The batch ledger: records, replacement on rerun, order, held streak, the disabled flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from foodtaster.state.lake import Lake
from foodtaster.state.ledger import (
    batch_entries,
    clear_disabled,
    held_batches,
    held_streak,
    is_disabled,
    re_enable,
    record_batch,
    record_disabled,
    record_run,
)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(str(tmp_path / "lake"))


def entry(batch_id: str, verdict: str = "published", batch_date: str = "2026-11-20",
          **changes: object) -> dict:
    quarantined = {"published": 1, "held": 40, "empty": 0}[verdict]
    messages = 0 if verdict == "empty" else 100
    return {
        "batch_id": batch_id, "batch_date": batch_date, "messages": messages,
        "valid": messages - quarantined, "quarantined": quarantined, "duplicates_dropped": 0,
        "quarantine_rate": quarantined / messages if messages else 0.0, "verdict": verdict,
        "severity": "critical" if verdict == "held" else "ok",
        "why": ["quarantine rate 40.00% >= hold_rate 25.00%"] if verdict == "held" else [],
        "timings": {"total_s": 1.5}, "recorded_at": "2026-11-21T00:00:00+00:00",
        **changes,
    }


def record_days(lake: Lake, verdicts: list[str]) -> None:
    for day, verdict in enumerate(verdicts, 1):
        record_batch(lake, "orders", entry(f"202611{day:02d}", verdict, f"2026-11-{day:02d}"))


def test_record_and_read_back(lake: Lake) -> None:
    assert batch_entries(lake, "orders") == []
    record_batch(lake, "orders", entry("20261120"))
    [stored] = batch_entries(lake, "orders")
    assert stored == {**entry("20261120"), "dataset": "orders"}


def test_recorded_at_defaults_to_now(lake: Lake) -> None:
    document = entry("20261120")
    del document["recorded_at"]
    record_batch(lake, "orders", document)
    assert batch_entries(lake, "orders")[0]["recorded_at"].endswith("+00:00")


def test_rerecording_a_batch_replaces_it(lake: Lake) -> None:
    record_batch(lake, "orders", entry("20261120", "held"))
    record_batch(lake, "orders", entry("20261120", "published"))
    assert [(e["batch_id"], e["verdict"]) for e in batch_entries(lake, "orders")] == [
        ("20261120", "published")
    ]


def test_entries_are_in_data_order_and_datasets_apart(lake: Lake) -> None:
    record_batch(lake, "orders", entry("2026112109", batch_date="2026-11-21"))
    record_batch(lake, "orders", entry("2026112013", batch_date="2026-11-20"))
    record_batch(lake, "orders", entry("2026112102", batch_date="2026-11-21"))
    record_batch(lake, "payments", entry("2026111900", batch_date="2026-11-19"))
    assert [e["batch_id"] for e in batch_entries(lake, "orders")] == [
        "2026112013", "2026112102", "2026112109"
    ]
    assert [e["batch_id"] for e in batch_entries(lake, "payments")] == ["2026111900"]


@pytest.mark.parametrize(
    ("verdicts", "streak"),
    [
        ([], 0),
        (["published"], 0),
        (["held"], 1),
        (["published", "held", "held"], 2),
        (["held", "held", "published"], 0),  # a published batch resets it
        (["held", "empty", "held", "empty"], 2),  # empty batches neither count nor break it
        (["held", "published", "held", "held", "held"], 3),
    ],
)
def test_held_streak(lake: Lake, verdicts: list[str], streak: int) -> None:
    record_days(lake, verdicts)
    assert held_streak(lake, "orders") == streak


def test_a_rerun_that_publishes_breaks_the_streak_where_it_sits(lake: Lake) -> None:
    record_days(lake, ["held", "held", "held"])
    record_batch(lake, "orders", entry("20261102", "published", "2026-11-02"))
    assert held_streak(lake, "orders") == 1


def test_incomplete_or_wrong_entries_are_refused(lake: Lake) -> None:
    document = entry("20261120")
    del document["quarantined"]
    with pytest.raises(ValueError, match="quarantined"):
        record_batch(lake, "orders", document)
    with pytest.raises(ValueError, match="verdict"):
        record_batch(lake, "orders", {**entry("20261120"), "verdict": "ok"})
    with pytest.raises(ValueError, match="batch id"):
        record_batch(lake, "orders", entry("../escape"))
    with pytest.raises(ValueError, match="date"):
        record_batch(lake, "orders", entry("20261120", batch_date="20261120"))
    assert batch_entries(lake, "orders") == []


def test_disabled_flag(lake: Lake) -> None:
    assert not is_disabled(lake, "orders")
    clear_disabled(lake, "orders")  # clearing what is not there is fine
    record_disabled(lake, "orders", "5 held batches in a row")
    assert is_disabled(lake, "orders")
    assert not is_disabled(lake, "payments")
    assert held_streak(lake, "orders") == 0  # the flag is not a batch
    clear_disabled(lake, "orders")
    assert not is_disabled(lake, "orders")


def test_the_held_batches_are_the_streak_oldest_first(lake: Lake) -> None:
    record_days(lake, ["held", "published", "held", "empty", "held"])
    assert [e["batch_id"] for e in held_batches(lake, "orders")] == ["20261103", "20261105"]
    assert held_streak(lake, "orders") == 2


def test_recording_a_run_says_when_the_self_pause_is_due(lake: Lake) -> None:
    recorded = [record_run(lake, "orders", entry(f"202611{day:02d}", verdict, f"2026-11-{day:02d}"), 2)
                for day, verdict in enumerate(["published", "held", "held", "held"], 1)]
    assert [(r.held_streak, r.pause_due) for r in recorded] == [(0, False), (1, False), (2, True),
                                                                 (3, False)]
    record_disabled(lake, "orders", "2 held batches in a row")
    again = record_run(lake, "orders", entry("20261105", "held", "2026-11-05"), 2)
    assert (again.held_streak, again.pause_due) == (4, False)  # paused already: not twice
    assert [e["batch_id"] for e in batch_entries(lake, "orders")][-1] == "20261105"


def test_re_enabling_a_paused_dataset_is_logged_with_its_batch(
    lake: Lake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="foodtaster")
    assert not re_enable(lake, "orders", "20261106")  # not paused: nothing to say
    assert "re_enabled" not in caplog.text
    record_disabled(lake, "orders", "3 held batches in a row")
    assert re_enable(lake, "orders", "20261106")
    assert not is_disabled(lake, "orders")
    [line] = [r.getMessage() for r in caplog.records if "event=re_enabled" in r.getMessage()]
    assert line.startswith("dataset=orders batch=20261106 event=re_enabled")
    assert "3 held batches in a row" in line
