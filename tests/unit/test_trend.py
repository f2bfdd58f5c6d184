"""The trend from a ledger built here: rates, thresholds, the last batches, producers, the chart."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.lake import commit_rows

from foodtaster.ops import trend, trend_chart
from foodtaster.registry import DatasetConfig
from foodtaster.state import ledger
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch
from foodtaster.state.tables import QUARANTINE

CONFIG = DatasetConfig(name="orders", contract="contracts.orders:Orders",
                       expectation_suite="expectations/orders.json", alert_rate=0.02, hold_rate=0.2)
PNG = b"\x89PNG\r\n\x1a\n"


def entry(day: str, messages: int, quarantined: int, verdict: str = "published",
          top: list | None = None) -> dict:
    duplicates = 1 if messages else 0
    return {
        "batch_id": day.replace("-", ""), "batch_date": day, "messages": messages,
        "valid": messages - quarantined - duplicates, "quarantined": quarantined,
        "duplicates_dropped": duplicates,
        "quarantine_rate": round(quarantined / messages, 6) if messages else 0.0,
        "verdict": verdict, "severity": None, "why": "", "timings": None,
        "top_reasons": top or [],
    }


def quarantine(lake: Lake, day: str, producers: list[str | None]) -> None:
    table = pa.table({"_raw": pa.array([b"{}"] * len(producers), pa.binary()),
                      "producer": pa.array(producers, pa.string())})
    commit_rows(lake, "orders", QUARANTINE, day, day.replace("-", ""), table)


@pytest.fixture
def lake(tmp_path) -> Lake:
    the_lake = Lake(str(tmp_path / "lake"))
    days = [("2026-11-01", 100, 1), ("2026-11-02", 100, 2), ("2026-11-03", 0, 0),
            ("2026-11-04", 100, 4), ("2026-11-05", 100, 30)]
    for day, messages, quarantined in days:
        verdict = "empty" if not messages else ("held" if quarantined >= 20 else "published")
        record_batch(the_lake, "orders", entry(day, messages, quarantined, verdict,
                                               [["json.invalid", quarantined]]))
    quarantine(the_lake, "2026-11-04", ["checkout-svc", "fulfilment-svc", None, "checkout-svc"])
    quarantine(the_lake, "2026-11-05", ["fulfilment-svc"] * 20 + ["checkout-svc"] * 10)
    return the_lake


def test_every_batch_in_data_order_with_the_thresholds_and_a_rising_recent_rate(lake):
    t = trend.dataset_trend(lake, CONFIG, last=3)
    assert [b.batch_date for b in t.batches] == [f"2026-11-0{d}" for d in range(1, 6)]
    assert [b.quarantine_rate for b in t.batches] == [0.01, 0.02, 0.0, 0.04, 0.3]
    assert (t.alert_rate, t.hold_rate) == (0.02, 0.2)
    # the last 3 non-empty batches (the empty day is skipped): (2 + 4 + 30) / 300
    assert t.recent_rate == pytest.approx(0.12)
    assert t.rising is True
    assert t.batches[-1].top_reasons == (("json.invalid", 30),)
    assert "12.00% quarantined over the last 3 batches, rising" in trend.describe(t)


def test_producers_ranked_by_quarantined_messages_null_as_unknown(lake):
    t = trend.dataset_trend(lake, CONFIG)
    assert t.producers == (("fulfilment-svc", 21), ("checkout-svc", 12), ("(unknown)", 1))


def test_a_date_range_keeps_only_its_batches_and_a_falling_rate_is_not_rising(lake):
    record_batch(lake, "orders", entry("2026-11-06", 100, 1))
    t = trend.dataset_trend(lake, CONFIG, since="2026-11-05", until="2026-11-06")
    assert [b.batch_id for b in t.batches] == ["20261105", "20261106"]
    assert t.rising is False
    assert t.producers == (("fulfilment-svc", 20), ("checkout-svc", 10))  # 11-04 left out
    with pytest.raises(ValueError, match="since is after until"):
        trend.dataset_trend(lake, CONFIG, since="2026-11-06", until="2026-11-05")
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        trend.dataset_trend(lake, CONFIG, since="11/05/2026")


def test_no_producer_column_no_producers_and_an_empty_ledger_has_no_rate(tmp_path):
    the_lake = Lake(str(tmp_path / "lake"))
    assert trend.dataset_trend(the_lake, CONFIG).recent_rate is None
    record_batch(the_lake, "orders", entry("2026-11-01", 10, 2))
    commit_rows(the_lake, "orders", QUARANTINE, "2026-11-01", "20261101",
                pa.table({"_raw": pa.array([b"x", b"y"], pa.binary())}))
    t = trend.dataset_trend(the_lake, CONFIG)
    assert t.producers == () and t.rising is False and t.recent_rate == 0.2


@pytest.mark.parametrize("rates, rising", [
    ([0.01, 0.02, 0.03], True), ([0.03, 0.02, 0.01], False), ([0.02, 0.02], False),
    ([0.05], False), ([0.01, 0.01, 0.01, 0.01, 0.5], True), ([0.5, 0.01, 0.01, 0.01, 0.02], False),
])
def test_rising_is_the_slope_of_the_rates(rates, rising):
    assert trend.is_rising(rates) is rising


def test_the_chart_is_a_png_written_beside_the_reports_or_where_asked(lake, tmp_path):
    t = trend.dataset_trend(lake, CONFIG)
    png = trend_chart.render_trend(t)
    assert png.startswith(PNG) and len(png) > 5000
    written = trend_chart.write_trend(t, lake)
    assert written == f"{lake.root}/reports/orders/trend.png"
    assert Path(written).read_bytes().startswith(PNG)
    elsewhere = trend_chart.write_trend(t, lake, str(tmp_path / "out" / "orders-nov.png"))
    assert Path(elsewhere).read_bytes().startswith(PNG)
    empty = trend.dataset_trend(lake, CONFIG, since="2027-01-01")
    assert trend_chart.render_trend(empty).startswith(PNG)
    # no batch: a sentence, and no axes whose lone tick label could be cut off or misread
    nothing = trend_chart.trend_figure(empty)
    assert nothing.axes == [] and "no batch in range, so no chart" in nothing.texts[0].get_text()


def test_the_chart_places_batches_by_date_and_leaves_empty_ones_out_of_the_rate_line(lake):
    from matplotlib.dates import num2date

    record_batch(lake, "orders", entry("2026-11-12", 100, 5))  # a week without batches, then one
    figure = trend_chart.trend_figure(trend.dataset_trend(lake, CONFIG))
    axes = figure.axes[0]
    [line] = [line for line in axes.lines if len(line.get_xdata()) > 2]  # not a threshold
    days = [x.date().isoformat() for x in line.get_xdata()]  # the datetimes it was given
    assert days == ["2026-11-01", "2026-11-02", "2026-11-04", "2026-11-05", "2026-11-12"]
    assert list(line.get_ydata()) == [0.01, 0.02, 0.04, 0.3, 0.05]  # no dive to 0% on 11-03
    marked = [c for c in axes.collections if c.get_label() == "empty batch: no messages, no rate"]
    assert len(marked) == 1 and num2date(marked[0].get_offsets()[0][0]).date().isoformat() == "2026-11-03"
    assert figure.get_supxlabel() == ("6 batches, placed by batch date; 1 empty batch (×) left out of "
                                      "the rate line")


def test_batches_of_one_date_spread_across_its_day():
    batches = [trend.BatchRate(batch_id, "2026-11-01", "published", 10, 1, 0.1, ())
               for batch_id in ("2026110100", "2026110112")]
    empty = trend.BatchRate("20261102", "2026-11-02", "empty", 0, 0, 0.0, ())
    times = trend_chart.batch_times([*batches, empty])
    assert [t.isoformat() for t in times] == ["2026-11-01T00:00:00", "2026-11-01T12:00:00",
                                              "2026-11-02T00:00:00"]


def test_the_trend_command_prints_the_rate_and_writes_the_chart(lake, tmp_path, monkeypatch, capsys):
    from foodtaster.ops.cli import main

    registry = tmp_path / "pipeline.yaml"
    registry.write_text("datasets:\n  orders:\n    contract: contracts.orders:Orders\n"
                        "    expectation_suite: expectations/orders.json\n"
                        "    alert_rate: 0.02\n    hold_rate: 0.2\n")
    monkeypatch.setenv("FOODTASTER_REGISTRY", str(registry))
    monkeypatch.setenv("FOODTASTER_LAKE", lake.root)
    out = tmp_path / "nov.png"
    assert main(["trend", "orders", "--since", "2026-11-04", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "orders: 17.00% quarantined over the last 2 batches, rising" in printed
    assert "21  fulfilment-svc" in printed and f"chart: {out}" in printed
    assert out.read_bytes().startswith(PNG)
    assert main(["trend", "orders", "--since", "2026-13-01"]) == 2
    assert "not a calendar day" in capsys.readouterr().err
    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path / "elsewhere"))  # --lake wins, as drift's
    assert main(["trend", "orders", "--lake", lake.root, "--json"]) == 0
    assert '"batch_date": "2026-11-05"' in capsys.readouterr().out


def test_a_limit_keeps_the_latest_batches_and_counts_their_producers_only(lake):
    t = trend.dataset_trend(lake, CONFIG, limit=1)
    assert [b.batch_date for b in t.batches] == ["2026-11-05"]
    assert t.producers == (("fulfilment-svc", 20), ("checkout-svc", 10))


def test_a_pending_batch_takes_its_place_and_replaces_its_earlier_record(lake):
    summary = {"batch_id": "20261104", "batch_date": "2026-11-04", "messages": 100,
               "quarantined": 50, "quarantine_rate": 0.5, "reasons": {"json.invalid": 50}}
    t = trend.dataset_trend(lake, CONFIG, pending=ledger.pending_entry(summary, publish=False))
    assert [(b.batch_date, b.verdict, b.quarantine_rate) for b in t.batches][2:4] == [
        ("2026-11-03", "empty", 0.0), ("2026-11-04", "held", 0.5)]
    assert len(t.batches) == 5 and t.batches[3].top_reasons == (("json.invalid", 50),)
