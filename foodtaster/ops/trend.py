"""The trend of a dataset: the quarantine rate of every batch against its thresholds.

Read from the ledger (one record a batch) and, for the producers, from the
quarantine table (who to call is the first question). No Spark and no
Airflow: an alert task and the UI plugin import it, so matplotlib is imported
only when a chart is drawn.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import fsspec

from foodtaster.drift import UNKNOWN_PRODUCER
from foodtaster.registry import DatasetConfig
from foodtaster.state.lake import Lake, check_date
from foodtaster.state.ledger import LedgerEntry, batch_entries

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LAST_BATCHES = 5
UNKNOWN_PRODUCER_MEANS = ("(unknown): messages whose producer could not be read: not JSON, not "
                          "an object, or without a producer field")
PRODUCER_COLUMN = "producer"  # the registry's default `producer` path


def producer_label(name: str) -> str:
    """A producer as a table names it: `(unknown)` says why it is unknown."""
    return f"{UNKNOWN_PRODUCER} no readable producer field" if name == UNKNOWN_PRODUCER else name


@dataclass(frozen=True)
class BatchRate:
    batch_id: str
    batch_date: str
    verdict: str
    messages: int
    quarantined: int
    quarantine_rate: float
    top_reasons: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Trend:
    dataset: str
    alert_rate: float
    hold_rate: float
    batches: tuple[BatchRate, ...]  # every batch in the range, in data order
    last: int  # how many of the latest non-empty batches `recent_rate` and `rising` cover
    recent_rate: float | None  # quarantined / messages over those batches; None without any
    rising: bool
    producers: tuple[tuple[str, int], ...]  # quarantined messages by producer, most first
    new_fields: tuple[tuple[str, int], ...] = ()  # (batch id, unknown paths first seen in it), each batch

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset, "alert_rate": self.alert_rate, "hold_rate": self.hold_rate,
            "batches": [b.__dict__ | {"top_reasons": [list(r) for r in b.top_reasons]}
                        for b in self.batches],
            "last": self.last, "recent_rate": self.recent_rate, "rising": self.rising,
            "producers": [list(p) for p in self.producers],
            "new_fields": [list(n) for n in self.new_fields],
        }


def _batch_rate(entry: LedgerEntry) -> BatchRate:
    return BatchRate(
        batch_id=entry["batch_id"], batch_date=entry["batch_date"], verdict=entry["verdict"],
        messages=int(entry["messages"]), quarantined=int(entry["quarantined"]),
        quarantine_rate=float(entry["quarantine_rate"]),
        top_reasons=tuple((str(rule), int(count)) for rule, count in entry.get("top_reasons") or ()),
    )


def is_rising(rates: list[float]) -> bool:
    """Whether the least-squares line through the rates climbs: one spike among calm
    batches tilts it less than a feed that gets worse batch after batch."""
    n = len(rates)
    if n < 2:
        return False
    mean_x, mean_y = (n - 1) / 2, sum(rates) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(rates))
    return slope > 1e-12


def _day(value: str) -> str:
    check_date(value)
    try:
        date.fromisoformat(value)
    except ValueError as err:
        raise ValueError(f"date {value!r} is not a calendar day: {err}") from err
    return value


def dataset_trend(lake: Lake, config: DatasetConfig, *, since: str | None = None,
                  until: str | None = None, last: int = LAST_BATCHES,
                  pending: LedgerEntry | None = None, limit: int | None = None) -> Trend:
    """The trend of `config`'s dataset over batch dates `since`..`until` (inclusive; open
    ends by default). Empty batches are drawn but say nothing about the rate, so `last`
    counts non-empty ones. `pending` is a ledger entry not recorded yet (the batch an alert
    is about: the ledger records it after the alert): it takes its place in data order,
    replacing an earlier record of the same batch. `limit` keeps the latest batches only
    (an alert's chart): the producers are then counted over those alone, so an alert never
    reads every quarantine partition of a long history."""
    if last < 1:
        raise ValueError(f"last must be at least 1 batch, got {last}")
    since, until = (_day(d) if d else None for d in (since, until))
    if since and until and since > until:
        raise ValueError(f"date range {since}..{until} is empty: since is after until")
    entries = batch_entries(lake, config.name)
    if pending is not None:
        entries = sorted(
            [e for e in entries if e["batch_id"] != pending["batch_id"]] + [pending],
            key=lambda entry: (entry["batch_date"], entry["batch_id"]),
        )
    batches = tuple(
        _batch_rate(entry) for entry in entries
        if (not since or entry["batch_date"] >= since) and (not until or entry["batch_date"] <= until)
    )[-limit if limit else 0:]
    recent = [b for b in batches if b.messages][-last:]
    messages = sum(b.messages for b in recent)
    return Trend(
        dataset=config.name, alert_rate=config.alert_rate, hold_rate=config.hold_rate,
        batches=batches, last=last,
        recent_rate=round(sum(b.quarantined for b in recent) / messages, 6) if messages else None,
        rising=is_rising([b.quarantine_rate for b in recent]),
        producers=producers_ranked(lake, config.name,
                                   [(b.batch_date, b.batch_id) for b in batches if b.quarantined],
                                   config.producer),
        new_fields=_new_fields(lake, config.name, batches),
    )


def _new_fields(lake: Lake, dataset: str, batches: Sequence[BatchRate]) -> tuple[tuple[str, int], ...]:
    """Each batch's unknown paths first seen in it (`foodtaster.drift`); 0 where none is recorded."""
    from foodtaster.drift import new_per_batch
    from foodtaster.state.drift import DriftLog

    new = dict(new_per_batch(DriftLog(lake, dataset).batches()))
    return tuple((b.batch_id, new.get(b.batch_id, 0)) for b in batches)


def producers_ranked(lake: Lake, dataset: str, batches: Iterable[tuple[str, str]],
                     producer: str = PRODUCER_COLUMN) -> tuple[tuple[str, int], ...]:
    """Quarantined messages by producer over `batches` ((batch date, batch id) each), most
    first (ties by name); empty when the dataset's quarantine has no producer column (its
    contract has none). `producer`: the registry's path of it (`source`, `meta.service`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from foodtaster.contract.path import Path
    from foodtaster.state.tables import QUARANTINE, DatasetTables

    first, *inner = Path.parse(producer).keys

    counts: dict[str, int] = {}
    tables = DatasetTables(lake, dataset)
    if first not in tables.columns(QUARANTINE):
        return ()
    every = tables.read(QUARANTINE, None, [first, "batch_id"])
    ids = every.column("batch_id")
    wanted = pa.array(sorted({batch_id for _, batch_id in batches}), pa.string()).cast(ids.type)
    column = every.filter(pc.is_in(ids, value_set=wanted)).column(first)
    try:
        for key in inner:  # a nested producer: a field of the written struct
            column = pc.struct_field(column, key)
    except (KeyError, ValueError, TypeError, NotImplementedError):
        return ()  # written without it: no producer to count
    for row in pc.value_counts(column).to_pylist():
        name = row["values"] if row["values"] not in (None, "") else UNKNOWN_PRODUCER
        counts[name] = counts.get(name, 0) + row["counts"]
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _percent(rate: float) -> str:
    return f"{rate * 100:.2f}%"


def describe(trend: Trend) -> str:
    """One line for a person: the recent rate, its direction and the thresholds."""
    if trend.recent_rate is None:
        return f"{trend.dataset}: no batch with messages in range"
    direction = "rising" if trend.rising else "not rising"
    shown = min(trend.last, sum(1 for b in trend.batches if b.messages))
    batches = "batch" if shown == 1 else f"{shown} batches"
    return (f"{trend.dataset}: {_percent(trend.recent_rate)} quarantined over the last {batches}, "
            f"{direction} (alert_rate {_percent(trend.alert_rate)}, "
            f"hold_rate {_percent(trend.hold_rate)})")


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
    axes.legend(loc="best", fontsize=8)
    axes.set_title(f"{trend.dataset}  {trend.batches[0].batch_date} .. {trend.batches[-1].batch_date}",
                   fontsize=10, loc="left")
    figure.suptitle(describe(trend), fontsize=9, x=0.01, ha="left")
    figure.supxlabel(_caption(trend, len(empty)), fontsize=8, x=0.01, ha="left")
    if bars is not None:
        names = [name for name, _ in trend.producers][:8][::-1]  # most quarantined on top
        counts = [count for _, count in trend.producers][:8][::-1]
        bars.barh(names, counts, color="#7f8c8d")
        shown = len(trend.batches)
        bars.set_title(f"quarantined by producer,\n{'the batch' if shown == 1 else f'all {shown} batches'}",
                       fontsize=9)
        bars.tick_params(labelsize=8)
    return figure


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


def write_png(uri: str, png: bytes) -> None:
    """Write an image to any fsspec URI, aside then moved: a reader never sees half a PNG."""
    fs, target = fsspec.core.url_to_fs(uri)
    parent = target.rsplit("/", 1)[0]
    if parent and parent != target:
        fs.makedirs(parent, exist_ok=True)
    with fs.open(f"{target}.tmp", "wb") as handle:
        handle.write(png)
    fs.mv(f"{target}.tmp", target)


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
