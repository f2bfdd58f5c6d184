"""Drift: what producers change in their messages, recorded from every batch.

A batch's drift (`BatchDrift`) is counted by the job in the pass it already makes
(`foodtaster.engine.judging.drift`): every unknown path in pattern form (`data.lines[].discount`) with
the messages that carried it, by producer; the messages of each producer; and how many messages
carried each optional field of the contract. It is kept in the lake as an append-only log, one
event a batch (`foodtaster.state.drift`); a rerun of a batch replaces its event in the fold, so
nothing is counted twice. From that history, a batch's report (`report`): each path's share and
the batch where it was first seen (new: first seen in this batch), and the optional fields that
stopped coming (present in each of the `window` batches before, absent now).

Pure: no Spark, no lake. Only paths, counts and producer names are kept: never a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

UNKNOWN_PRODUCER = "(unknown)"  # the producer field was absent, null or could not be parsed


@dataclass(frozen=True)
class PathCount:
    """An unknown path (a pattern) one producer's messages carried in a batch, and how many."""

    pattern: str
    producer: str
    messages: int


@dataclass(frozen=True)
class BatchDrift:
    """What one batch says about its messages' shape: the drift event's content."""

    batch_id: str
    batch_date: str
    messages: int  # the messages the pass read (lines that were one JSON object or not)
    producers: dict[str, int] = field(default_factory=dict)  # messages by producer
    paths: tuple[PathCount, ...] = ()
    optional: dict[str, int] = field(default_factory=dict)  # optional field -> messages carrying it

    @property
    def order(self) -> tuple[str, str]:
        """Where the batch stands in the dataset's history: by its data's date, then its id."""
        return (self.batch_date, self.batch_id)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "paths": [asdict(p) for p in self.paths]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchDrift:
        return cls(batch_id=str(data["batch_id"]), batch_date=str(data["batch_date"]),
                   messages=int(data["messages"]),
                   producers={str(k): int(v) for k, v in (data.get("producers") or {}).items()},
                   paths=tuple(PathCount(str(p["pattern"]), str(p["producer"]), int(p["messages"]))
                               for p in data.get("paths") or ()),
                   optional={str(k): int(v) for k, v in (data.get("optional") or {}).items()})


@dataclass(frozen=True)
class SeenPath:
    """An unknown path of a batch as a person reads it."""

    pattern: str
    producer: str
    messages: int
    share: float  # of the batch's messages
    producer_messages: int  # the producer's messages in the batch
    first_seen: str  # the batch id where this producer first sent it
    new: bool  # first seen in this batch

    @property
    def producer_share(self) -> float:
        return self.messages / self.producer_messages if self.producer_messages else 0.0


@dataclass(frozen=True)
class DriftReport:
    """One batch's drift against the batches before it; `to_json` goes in its summary."""

    batch_id: str
    messages: int
    paths: tuple[SeenPath, ...] = ()  # most messages first
    stopped: tuple[str, ...] = ()  # optional fields present in each of the `window` batches before
    window: int = 0

    @property
    def new(self) -> tuple[SeenPath, ...]:
        return tuple(p for p in self.paths if p.new)

    def to_json(self) -> dict[str, Any]:
        return {"batch_id": self.batch_id, "messages": self.messages, "window": self.window,
                "paths": [asdict(p) for p in self.paths], "stopped": list(self.stopped)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DriftReport:
        return cls(batch_id=str(data["batch_id"]), messages=int(data["messages"]),
                   paths=tuple(SeenPath(**p) for p in data.get("paths") or ()),
                   stopped=tuple(data.get("stopped") or ()), window=int(data.get("window") or 0))


# ---- the log's fold -------------------------------------------------------------------------


def initial() -> dict[str, Any]:
    return {}


def fold(state: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """batch id -> its latest event (by event name): a rerun replaces the batch's counts; two
    events of one batch written at once fold to the same state in either order."""
    kept = state.get(event["batch_id"])
    if kept is None or kept["event"] < event["event"]:
        state = {**state, event["batch_id"]: event}
    return state


def history(state: dict[str, Any]) -> list[BatchDrift]:
    """The folded batches, in data order."""
    return sorted((BatchDrift.from_json(e) for e in state.values()), key=lambda b: b.order)


# ---- a batch against its history ------------------------------------------------------------


def report(batch: BatchDrift, earlier: Iterable[BatchDrift], window: int) -> DriftReport:
    """`batch` against the batches before it in data order (`earlier` may hold any batch: the
    batch itself and later ones are left out, so a rerun reports what the first run did)."""
    before = sorted((b for b in earlier if b.order < batch.order and b.batch_id != batch.batch_id),
                    key=lambda b: b.order)
    first = first_seen(before)
    paths = tuple(sorted((
        SeenPath(pattern=p.pattern, producer=p.producer, messages=p.messages,
                 share=round(p.messages / batch.messages, 6) if batch.messages else 0.0,
                 producer_messages=batch.producers.get(p.producer, 0),
                 first_seen=first.get((p.pattern, p.producer), batch.batch_id),
                 new=(p.pattern, p.producer) not in first)
        for p in batch.paths), key=lambda p: (-p.messages, p.pattern, p.producer)))
    return DriftReport(batch_id=batch.batch_id, messages=batch.messages, paths=paths,
                       stopped=stopped(batch, before[-window:] if window else []), window=window)


def first_seen(ordered: Iterable[BatchDrift]) -> dict[tuple[str, str], str]:
    """(pattern, producer) -> the first of the `ordered` batches that carried it."""
    first: dict[tuple[str, str], str] = {}
    for past in ordered:
        for path in past.paths:
            first.setdefault((path.pattern, path.producer), past.batch_id)
    return first


def stopped(batch: BatchDrift, previous: Sequence[BatchDrift]) -> tuple[str, ...]:
    """The optional fields `batch` counts none of that each of the `previous` batches (at least
    one) carried. An empty batch says nothing about its fields."""
    if not previous or not batch.messages:
        return ()
    return tuple(sorted(name for name, count in batch.optional.items()
                        if count == 0 and all(b.optional.get(name, 0) > 0 for b in previous)))


def crossing(report: DriftReport, page_share: float | None) -> tuple[SeenPath, ...]:
    """The new paths whose share of the batch's messages is at or above `page_share` (None: none)."""
    if page_share is None:
        return ()
    return tuple(p for p in report.new if p.share >= page_share)


def page_why(path: SeenPath, page_share: float) -> str:
    """A verdict's line for a new path that crossed the page threshold."""
    return (f"new field {path.pattern} from {path.producer} in {path.share:.2%} of messages "
            f">= drift_page_share {page_share:.2%}")


def new_per_batch(batches: Iterable[BatchDrift]) -> list[tuple[str, int]]:
    """(batch id, unknown paths first seen in it) for every batch, in data order: drift's trend."""
    seen: set[tuple[str, str]] = set()
    out = []
    for batch in sorted(batches, key=lambda b: b.order):
        new = {(p.pattern, p.producer) for p in batch.paths} - seen
        seen |= new
        out.append((batch.batch_id, len(new)))
    return out


@dataclass(frozen=True)
class RangeRow:
    """An unknown path over a range of batches (the CLI's table)."""

    pattern: str
    producer: str
    messages: int
    share: float  # of the range's messages
    first_seen: str
    last_seen: str


def over_range(batches: Sequence[BatchDrift], since: str | None = None) -> tuple[list[RangeRow], int]:
    """Every unknown path of the batches from `since` (a date, inclusive; None: all), and the
    range's messages. `first_seen` looks at every batch, before `since` too."""
    ordered = sorted(batches, key=lambda b: b.order)
    first = first_seen(ordered)
    shown = [b for b in ordered if since is None or b.batch_date >= since]
    messages = sum(b.messages for b in shown)
    counts: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], str] = {}
    for batch in shown:
        for path in batch.paths:
            key = (path.pattern, path.producer)
            counts[key] = counts.get(key, 0) + path.messages
            last[key] = batch.batch_id
    rows = [RangeRow(pattern, producer, n, round(n / messages, 6) if messages else 0.0,
                     first[(pattern, producer)], last[(pattern, producer)])
            for (pattern, producer), n in counts.items()]
    return sorted(rows, key=lambda r: (-r.messages, r.pattern, r.producer)), messages
