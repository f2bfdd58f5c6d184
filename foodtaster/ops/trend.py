"""The trend of a dataset: the quarantine rate of every batch against its thresholds.

Read from the ledger (one record a batch), for the producers from the quarantine table (who
to call is the first question) and the drift log (how many messages each sent), and the new
fields of each batch from the drift log. No Spark and no Airflow: an alert task and the UI
plugin import it. The chart and the `trend` command: `foodtaster.ops.trend_chart`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import fsspec

from foodtaster.drift import UNKNOWN_PRODUCER, BatchDrift
from foodtaster.registry import DatasetConfig
from foodtaster.state.lake import Lake, check_date
from foodtaster.state.ledger import LedgerEntry, batch_entries

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
    # Messages by producer over the batches (the drift log's counts; a line the job could not
    # read is `(unknown)`'s, as its quarantined row is): what `producer_rates` divides by.
    producer_messages: tuple[tuple[str, int], ...] = ()

    def producer_rates(self) -> tuple[tuple[str, int, int], ...]:
        """(producer, quarantined, messages) of each producer whose messages are recorded, its
        quarantine rate highest first: who sends the poison, at what rate, not only how much."""
        sent = dict(self.producer_messages)
        found = [(name, count, sent[name]) for name, count in self.producers if sent.get(name)]
        return tuple(sorted(found, key=lambda p: (-p[1] / p[2], -p[1], p[0])))

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset, "alert_rate": self.alert_rate, "hold_rate": self.hold_rate,
            "batches": [b.__dict__ | {"top_reasons": [list(r) for r in b.top_reasons]}
                        for b in self.batches],
            "last": self.last, "recent_rate": self.recent_rate, "rising": self.rising,
            "producers": [list(p) for p in self.producers],
            "new_fields": [list(n) for n in self.new_fields],
            "producer_messages": [list(p) for p in self.producer_messages],
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
    from foodtaster.state.drift import DriftLog

    drifts = DriftLog(lake, config.name).batches()
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
        new_fields=_new_fields(drifts, batches),
        producer_messages=_producer_messages(drifts, batches),
    )


def _new_fields(drifts: Sequence[BatchDrift], batches: Sequence[BatchRate]) -> tuple[tuple[str, int], ...]:
    """Each batch's unknown paths first seen in it (`foodtaster.drift`); 0 where none is recorded."""
    from foodtaster.drift import new_per_batch

    new = dict(new_per_batch(drifts))
    return tuple((b.batch_id, new.get(b.batch_id, 0)) for b in batches)


def _producer_messages(drifts: Sequence[BatchDrift],
                       batches: Sequence[BatchRate]) -> tuple[tuple[str, int], ...]:
    """Messages by producer over `batches`, from their drift events: the job read each message's
    producer in its pass. A line it could not read (too large, in an unreadable file) is in the
    batch's messages but in no producer's: it counts as `(unknown)`'s, as its quarantined row does."""
    counted = {b.batch_id: b for b in drifts}
    sent: dict[str, int] = {}
    for batch in batches:
        found = counted.get(batch.batch_id)
        if found is None:
            continue
        for name, count in found.producers.items():
            sent[name] = sent.get(name, 0) + count
        if batch.messages > found.messages:
            sent[UNKNOWN_PRODUCER] = sent.get(UNKNOWN_PRODUCER, 0) + batch.messages - found.messages
    return tuple(sorted(sent.items(), key=lambda item: (-item[1], item[0])))


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


def write_png(uri: str, png: bytes) -> None:
    """Write an image to any fsspec URI, aside then moved: a reader never sees half a PNG."""
    fs, target = fsspec.core.url_to_fs(uri)
    parent = target.rsplit("/", 1)[0]
    if parent and parent != target:
        fs.makedirs(parent, exist_ok=True)
    with fs.open(f"{target}.tmp", "wb") as handle:
        handle.write(png)
    fs.mv(f"{target}.tmp", target)
