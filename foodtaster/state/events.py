"""The one way state that changes after a batch is kept: an append-only log of events.

Under `_state/<kind>/<dataset>/`:

    events/<time>-<random>.json       one small JSON object a write, never rewritten
    snapshots/<time>-<random>.json    a fold of the log, with the names of the events it covers

Each write creates a new object under a name no other writer can pick (time to the
microsecond plus 64 random bits), so two writers at the same moment, on a local disk
or an object store, never lose each other's event: there is nothing to overwrite and
no lock to take. Today's state is the fold of the log, in name order. A snapshot
lists the events it covers rather than a time bound, so an event written late (a slow
writer, a skewed clock) with a name older than the snapshot is still folded in.

Poison list, row dispositions, retries, groups and broker sources each bring a fold
(`state, event -> state`, JSON in and out) and share everything else here. Writers do
not see each other's events before they write theirs, so a fold must give the same
state whatever the order of two events written at once (a late event is folded after
a snapshot that did not cover it).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import fsspec

from foodtaster.state.lake import Lake, check_batch_id, write_text

Event = dict[str, Any]
Fold = Callable[[Any, Event], Any]


def new_name(now: datetime | None = None) -> str:
    """A name that sorts by time and that no other writer picks: `20261122T151700.123456Z-<16 hex>`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%dT%H%M%S.%fZ}-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Folded:
    """A log's state, and what it was folded from (for a snapshot, and for tests)."""

    state: Any
    snapshot: str | None  # the snapshot it started from, if any
    events: tuple[str, ...]  # every event name the state covers, snapshot's included
    unsnapshotted: int  # how many of them came after the snapshot


@dataclass(frozen=True)
class EventLog:
    """One log: `_state/<kind>/<dataset>/` of a lake."""

    lake: Lake
    kind: str
    dataset: str

    def __post_init__(self) -> None:
        for part in (self.kind, self.dataset):
            check_batch_id(part)  # the same rule as a batch id: a safe single folder name

    @property
    def root(self) -> str:
        return self.lake.state(self.kind, self.dataset)

    def append(self, event: Event) -> str:
        """Write one event as its own object; returns its name (its id in the log).

        The record gets `event` (its name, which snapshots list) and `at` (UTC, ISO, unless given).
        """
        name = new_name()
        record = {"at": datetime.now(UTC).isoformat(), **event, "event": name}
        write_text(f"{self.root}/events/{name}.json", json.dumps(record, sort_keys=True, default=str))
        return name

    def events(self, after: frozenset[str] = frozenset()) -> list[Event]:
        """Every event of the log not in `after`, in name order (time, then the random part)."""
        return [_read(self._fs, path) for path in self._names("events") if _stem(path) not in after]

    def fold(self, fold: Fold, initial: Callable[[], Any]) -> Folded:
        """The state today: the latest snapshot (or `initial()`), then every event it does not cover."""
        snapshots = self._names("snapshots")
        if snapshots:
            latest = _read(self._fs, snapshots[-1])
            state, covered, start = latest["state"], frozenset(latest["covers"]), _stem(snapshots[-1])
        else:
            state, covered, start = initial(), frozenset(), None
        later = self.events(after=covered)
        for event in later:
            state = fold(state, event)
        names = sorted([*covered, *(event["event"] for event in later)])
        return Folded(state=state, snapshot=start, events=tuple(names), unsnapshotted=len(later))

    def compact(self, fold: Fold, initial: Callable[[], Any]) -> str | None:
        """Write a snapshot of the fold with the events it covers; None when there is nothing new.

        Events stay where they are: history is kept, and a reader still on an older
        snapshot folds the same state. Two compactions at once each write a correct
        snapshot: a reader takes the later name and folds every event it does not cover.
        """
        folded = self.fold(fold, initial)
        if folded.unsnapshotted == 0:
            return None
        name = new_name()
        snapshot = {"snapshot": name, "at": datetime.now(UTC).isoformat(),
                    "covers": list(folded.events), "state": folded.state}
        write_text(f"{self.root}/snapshots/{name}.json", json.dumps(snapshot, sort_keys=True, default=str))
        return name

    @property
    def _fs(self) -> fsspec.AbstractFileSystem:
        return fsspec.core.url_to_fs(self.root)[0]

    def _names(self, folder: str) -> list[str]:
        fs, path = fsspec.core.url_to_fs(f"{self.root}/{folder}")
        if not fs.exists(path):
            return []
        # Only finished objects: a local write's `.json.tmp` is not an event yet.
        return sorted(fs.glob(f"{path}/*.json"), key=_stem)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".json")


def _read(fs: fsspec.AbstractFileSystem, path: str) -> Event:
    with fs.open(path, "r", encoding="utf-8") as handle:
        return json.load(handle)
