"""The trend of a dataset drawn (`foodtaster.ops.trend`'s `Trend`): the quarantine rate of every
batch against its thresholds, with the fields new in each batch (drift) on a second axis, and
beside it the quarantine rate of each producer; and the `trend` command that prints and writes it.
matplotlib is imported only when a chart is drawn.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from foodtaster.ops.trend import (
    LAST_BATCHES,
    BatchRate,
    Trend,
    _percent,
    dataset_trend,
    describe,
    write_png,
)
from foodtaster.state.lake import Lake

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

VERDICT_COLOURS = {"published": "#2b7a3d", "held": "#c0392b", "empty": "#9e9e9e"}
EMPTY_MARK = "×"  # an empty batch on the chart: it has no rate, so it is not on the rate line


def batch_times(batches: Sequence[BatchRate]) -> list[datetime]:
    """Where each batch goes on the chart's time axis: its batch date, so a gap of days shows
    as one; the batches of one date (hourly, or landed twice) spread evenly across its day."""
    on_day: dict[str, int] = {}
    for batch in batches:
        on_day[batch.batch_date] = on_day.get(batch.batch_date, 0) + 1
    seen: dict[str, int] = {}
    times = []
    for batch in batches:
        index = seen[batch.batch_date] = seen.get(batch.batch_date, -1) + 1
        day = datetime.fromisoformat(batch.batch_date)
        times.append(day + timedelta(days=index / on_day[batch.batch_date]))
    return times


def trend_figure(trend: Trend, *, width: float = 9.0, dpi: int = 100) -> Figure:
    """The trend as a figure: the rate of every batch with messages by batch date (a dot
    coloured by its verdict, a line through them), empty batches marked × on the axis and
    left out of the line, the alert and hold thresholds as lines, and the producers ranked
    beside it. Without a batch, a sentence and no axes: no empty chart to misread."""
    # Figure + the Agg canvas directly: no pyplot, so no global backend or figure registry
    # in the long-lived api-server or task process.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

    if not trend.batches:
        figure = Figure(figsize=(width, 1.2), dpi=dpi, layout="constrained")
        FigureCanvasAgg(figure)
        figure.text(0.01, 0.5, f"{trend.dataset}: no batch in range, so no chart "
                    f"(alert_rate {_percent(trend.alert_rate)}, hold_rate {_percent(trend.hold_rate)})",
                    fontsize=10, va="center")
        return figure
    with_producers = bool(trend.producers)
    figure = Figure(figsize=(width, 3.6), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    if with_producers:
        axes, bars = figure.subplots(1, 2, width_ratios=[3, 1])
    else:
        axes, bars = figure.subplots(), None
    times = batch_times(trend.batches)
    judged = [(when, b) for when, b in zip(times, trend.batches, strict=True) if b.messages]
    empty = [when for when, b in zip(times, trend.batches, strict=True) if not b.messages]
    rates = [b.quarantine_rate for _, b in judged]
    axes.plot([when for when, _ in judged], rates, color="#34495e", linewidth=1.2, zorder=2)
    axes.scatter([when for when, _ in judged], rates,
                 c=[VERDICT_COLOURS.get(b.verdict, "#34495e") for _, b in judged], s=28, zorder=3)
    if empty:
        axes.scatter(empty, [0] * len(empty), marker="x", color=VERDICT_COLOURS["empty"], s=36,
                     zorder=3, clip_on=False, label="empty batch: no messages, no rate")
    axes.axhline(trend.alert_rate, color="#e67e22", linestyle="--", linewidth=1,
                 label=f"alert_rate {_percent(trend.alert_rate)}")
    axes.axhline(trend.hold_rate, color="#c0392b", linestyle="--", linewidth=1,
                 label=f"hold_rate {_percent(trend.hold_rate)}")
    axes.set_ylim(0, max([trend.hold_rate, *rates]) * 1.15)
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlim(times[0] - timedelta(days=1), times[-1] + timedelta(days=1))
    locator = AutoDateLocator(minticks=2, maxticks=8)
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    axes.tick_params(axis="x", labelsize=8)
    axes.set_ylabel("quarantine rate")
    axes.set_title(f"{trend.dataset}  {trend.batches[0].batch_date} .. {trend.batches[-1].batch_date}",
                   fontsize=10, loc="left")
    figure.suptitle(describe(trend), fontsize=9, x=0.01, ha="left")
    figure.supxlabel(_caption(trend, len(empty)), fontsize=8, x=0.01, ha="left")
    drift = _drift_line(axes, times, trend)
    handles, labels = axes.get_legend_handles_labels()
    if drift is not None:
        handles, labels = [*handles, drift], [*labels, drift.get_label()]
    axes.legend(handles, labels, loc="upper left", fontsize=8)
    if bars is not None:
        _producer_bars(bars, trend)
    return figure


NEW_FIELDS_LABEL = "fields new in the batch (drift)"
DRIFT_COLOUR = "#1f5fa8"


def _drift_line(axes: Axes, times: list[datetime], trend: Trend) -> Line2D | None:
    """The drift line on a second axis: how many fields the contract does not name were first
    sent in each batch (0 where none, or none recorded); None when no batch drew one."""
    new = dict(trend.new_fields)
    counts = [new.get(b.batch_id, 0) for b in trend.batches]
    if not any(counts):
        return None
    from matplotlib.ticker import MaxNLocator

    drift = axes.twinx()
    when: Any = times  # matplotlib converts datetimes; its stubs say floats
    (line,) = drift.plot(when, counts, color=DRIFT_COLOUR, linestyle=":", marker="^", markersize=5,
                         linewidth=1, label=NEW_FIELDS_LABEL, zorder=1)
    drift.set_ylim(0, max(counts) * 1.3)
    drift.yaxis.set_major_locator(MaxNLocator(integer=True))
    drift.set_ylabel("new fields", color=DRIFT_COLOUR, fontsize=8)
    drift.tick_params(axis="y", labelsize=8, colors=DRIFT_COLOUR)
    return line


def _producer_bars(bars: Axes, trend: Trend) -> None:
    """Each producer's quarantine rate over the batches (its quarantined of its messages), highest
    first; a lake without the producers' messages (no drift recorded) shows their counts."""
    from matplotlib.ticker import PercentFormatter

    shown = len(trend.batches)
    over = "the batch" if shown == 1 else f"all {shown} batches"
    rates = trend.producer_rates()[:8][::-1]  # highest rate on top
    if rates:
        bars.barh([name for name, _, _ in rates], [q / m for _, q, m in rates], color="#7f8c8d")
        for row, (_, quarantined, messages) in enumerate(rates):
            bars.annotate(f" {quarantined} of {messages}", (0, row), va="center", fontsize=7)
        bars.xaxis.set_major_formatter(PercentFormatter(1.0))
        bars.set_title(f"quarantine rate by producer,\n{over}", fontsize=9)
    else:
        names = [name for name, _ in trend.producers][:8][::-1]  # most quarantined on top
        bars.barh(names, [count for _, count in trend.producers][:8][::-1], color="#7f8c8d")
        bars.set_title(f"quarantined by producer,\n{over}", fontsize=9)
    bars.tick_params(labelsize=8)


def _caption(trend: Trend, empty: int) -> str:
    """What the chart shows, said under it: the batches, their spacing, the empty ones."""
    count = len(trend.batches)
    caption = f"{count} {'batch' if count == 1 else 'batches'}, placed by batch date"
    if empty:
        caption += (f"; {empty} empty {'batch' if empty == 1 else 'batches'} ({EMPTY_MARK}) "
                    "left out of the rate line")
    return caption


def render_trend(trend: Trend, *, width: float = 9.0, dpi: int = 100) -> bytes:
    """The trend as a PNG (`trend_figure`)."""
    buffer = io.BytesIO()
    trend_figure(trend, width=width, dpi=dpi).savefig(buffer, format="png")
    return buffer.getvalue()


def trend_uri(lake: Lake, dataset: str) -> str:
    """`reports/<dataset>/trend.png`: beside the batches' reports."""
    return f"{lake.root.rstrip('/')}/reports/{dataset}/trend.png"


def write_trend(trend: Trend, lake: Lake, path: str | None = None) -> str:
    """Write the chart to `path` (any fsspec URI) or `reports/<dataset>/trend.png`; returns where."""
    uri = path or trend_uri(lake, trend.dataset)
    write_png(uri, render_trend(trend))
    return uri




def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `trend` command's options."""
    parser.add_argument("dataset", help="a dataset of the registry")
    parser.add_argument("--since", metavar="YYYY-MM-DD", help="first batch date (default: the first)")
    parser.add_argument("--until", metavar="YYYY-MM-DD", help="last batch date (default: the last)")
    parser.add_argument("--last", type=int, default=LAST_BATCHES, metavar="N",
                        help=f"batches the recent rate and its direction cover (default {LAST_BATCHES})")
    parser.add_argument("--out", metavar="PATH",
                        help="where to write the PNG (default: <lake>/reports/<dataset>/trend.png)")
    parser.add_argument("--json", action="store_true", help="print the trend as JSON, no chart")
    parser.add_argument("--lake", help="the lake root (default: $FOODTASTER_LAKE, else ./data/lake)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from foodtaster.lake_paths import lake_root
    from foodtaster.registry import RegistryError, get_dataset

    try:
        config = get_dataset(args.dataset)
        lake = Lake(args.lake or lake_root())
        trend = dataset_trend(lake, config, since=args.since, until=args.until, last=args.last)
    except (RegistryError, ValueError) as err:
        print(f"foodtaster trend: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(trend.as_dict(), indent=2))
        return 0
    print(describe(trend))
    for name, count in trend.producers:
        print(f"  {count:>9,}  {name}")
    print(f"chart: {write_trend(trend, lake, args.out)}")
    return 0
