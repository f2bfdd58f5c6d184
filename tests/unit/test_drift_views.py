"""Drift where a person looks: counts that add up to the batches' messages and say what they
count, "new" and "stopped coming" marks on the batches page, a drift line and each producer's
quarantine rate on the trend chart."""

from __future__ import annotations

import pytest
from matplotlib.ticker import PercentFormatter
from test_trend import CONFIG, entry, quarantine

from foodtaster.drift import BatchDrift, PathCount
from foodtaster.ops import pages, trend, trend_chart
from foodtaster.state.drift import DriftLog
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04")


@pytest.fixture
def lake(tmp_path) -> Lake:
    """Four batches of 500 messages. Each of the first three carries the optional `note`; the
    fourth carries none of it (stopped coming), a field first sent in it (`coupon`, new), and
    one line too large for the job to read (499 read of 500)."""
    the_lake = Lake(str(tmp_path / "lake"))
    log = DriftLog(the_lake, "orders")
    for number, day in enumerate(DAYS, 1):
        record_batch(the_lake, "orders", entry(day, 500, 4))
        last = number == len(DAYS)
        read = 499 if last else 500
        log.record(BatchDrift(
            day.replace("-", ""), day, read, {"shop": 400, "app": read - 400},
            (PathCount("coupon", "app", 20),) if last else (PathCount("channel", "shop", 10),),
            {"note": 0 if last else 30}))
    quarantine(the_lake, DAYS[-1], ["shop", "app", "app", None])
    return the_lake


def test_the_batches_page_marks_new_fields_and_fields_that_stopped_coming(lake):
    html = pages.batches_page(lake, {"orders": CONFIG})
    rows = {row.split("</a>")[0].rsplit(">", 1)[-1]: row for row in html.split("<tr class=batch>")[1:]}
    latest = rows["20261104"]
    assert ('<a class=drift-marks href="datasets/orders/batches/20261104#drift">'
            '<span class="drift new" title="coupon">new: 1 field<span class=who>coupon</span></span>'
            '<span class="drift stopped" title="note">stopped coming: 1 field'
            '<span class=who>note</span></span></a>') in latest
    assert 'class="drift new"' in rows["20261101"]  # channel: first sent in the first batch
    for quiet in ("20261102", "20261103"):  # nothing new, nothing stopped
        assert "drift-marks" not in rows[quiet] and rows[quiet].endswith("<td></td></tr>")
    assert "<th>drift</th>" in html


def test_the_drift_counts_say_what_they_count_and_add_up_to_the_batches(lake):
    html = pages.batches_page(lake, {"orders": CONFIG})
    assert ("Drift: fields the contract does not name, over the 1999 messages the job read (of 2000: "
            "1 could not be read, too large or in an unreadable file, so no field of them is known) "
            "in the 4 batches shown. Each row: one producer's messages that carried the field; its "
            "share is of the 1999.") in html
    assert "<th>messages with it</th><th>share of 1999</th>" in html


def test_producers_are_shown_by_their_quarantine_rate(lake):
    found = trend.dataset_trend(lake, CONFIG)
    # the drift log's messages by producer; the unread line is (unknown)'s, as its quarantined row
    assert dict(found.producer_messages) == {"shop": 1600, "app": 399, "(unknown)": 1}
    assert found.producer_rates() == (("(unknown)", 1, 1), ("app", 2, 399), ("shop", 1, 1600))
    html = pages.batches_page(lake, {"orders": CONFIG})
    assert ("Quarantine rate by producer, the batches shown (its quarantined of its messages): "
            "(unknown) 100.00% (1 of 1), app 0.50% (2 of 399), shop 0.06% (1 of 1600)") in html


def test_the_chart_draws_the_new_fields_and_each_producers_rate(lake):
    figure = trend_chart.trend_figure(trend.dataset_trend(lake, CONFIG))
    rates_axes, bars = figure.axes[0], figure.axes[1]
    drift_axes = figure.axes[2]  # the second y axis of the rate chart
    [line] = [line for line in drift_axes.lines if line.get_label() == trend_chart.NEW_FIELDS_LABEL]
    assert list(line.get_ydata()) == [1, 0, 0, 1]  # channel in the first batch, coupon in the last
    assert trend_chart.NEW_FIELDS_LABEL in [t.get_text() for t in rates_axes.get_legend().get_texts()]
    assert bars.get_title() == "quarantine rate by producer,\nall 4 batches"
    assert isinstance(bars.xaxis.get_major_formatter(), PercentFormatter)
    widths = [round(patch.get_width(), 6) for patch in bars.patches]
    assert widths == [round(1 / 1600, 6), round(2 / 399, 6), 1.0]  # highest rate on top
    assert [t.get_text() for t in bars.get_yticklabels()] == ["shop", "app", "(unknown)"]


def test_a_batch_page_says_its_drift_counts_the_messages_read():
    from foodtaster.drift import report
    from foodtaster.ops import drift as drift_view

    before = BatchDrift("20261103", "2026-11-03", 500, {"shop": 500}, (), {"note": 30})
    batch = BatchDrift("20261104", "2026-11-04", 499, {"shop": 400, "app": 99},
                       (PathCount("coupon", "app", 20),), {"note": 0})
    summary = {"messages": 500, "drift": report(batch, [before], 3).to_json()}
    section = drift_view.batch_section(summary)
    assert ("<p>Counted over the 499 messages the job read (of 500: 1 could not be read, too large "
            "or in an unreadable file, so no field of them is known): each row is one producer's "
            "messages that carried the field, its share of those read, and of that producer's "
            "messages.</p>") in section
    assert "<td>coupon</td><td>app</td><td>20</td><td>4.01%</td><td>20.20% of 99</td>" in section
    new = drift_view.alert_blocks(summary)[0]  # the alert's table says what its share is of
    assert new.columns == ("Field", "Producer", "Messages with it", "Share of the 499 read",
                           "Of the producer's")
