"""The poison list: known-bad messages every run quarantines without judging them again.

One list a dataset, kept in the lake as an event log (`_state/poison/<dataset>/`, see
foodtaster.state.events), so every worker reads the same list and none keeps state of
its own. An entry matches one exact message (`fingerprint`: the SHA-256 of its bytes
as landed, the line without its ending) or every message with one value of the
dataset's unique key (`key`). Entries are added and removed, never edited: a removal
is an event of its own, and the log is the history.
"""

from __future__ import annotations

import getpass
import hashlib
import re
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.logs import batch_logger
from foodtaster.state.events import Event, EventLog
from foodtaster.state.lake import Lake

KIND = "poison"
SOURCES = ("operator", "crash", "downstream")
MATCHES = ("fingerprint", "key")
FINGERPRINT_PATTERN = re.compile(r"^[0-9a-f]{64}$")
COMPACT_AFTER = 200  # events after the latest snapshot before a writer takes a new one


class PoisonListError(UsageError):
    """An entry that cannot be added or removed as asked; the message says what to do."""


@dataclass(frozen=True)
class Seen:
    """Where a message was first seen: its lineage."""

    batch_id: str
    source_file: str
    line_number: int


@dataclass(frozen=True)
class Entry:
    id: str
    match: str  # "fingerprint" | "key"
    value: str  # the SHA-256 (hex) or the unique key's value
    why: str
    source: str  # "operator" | "crash" | "downstream"
    added_by: str
    added_at: str  # UTC, ISO 8601
    first_seen: Seen | None = None
    size: int | None = None  # a fingerprint's message length in bytes, when its bytes were at hand

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Entry:
        seen = record.get("first_seen")
        return cls(**{**record, "first_seen": Seen(**seen) if seen else None})


def fingerprint(raw: bytes) -> str:
    """What a `fingerprint` entry matches: the SHA-256 (hex) of a message's bytes as landed."""
    return hashlib.sha256(raw).hexdigest()


def _fold(state: dict[str, Any], event: Event) -> dict[str, Any]:
    entries, removed = dict(state["entries"]), dict(state["removed"])
    if event["type"] == "added" and event["entry"]["id"] not in removed:
        entries[event["entry"]["id"]] = event["entry"]
    elif event["type"] == "removed":
        # Kept even before its add is folded: a removal written by a skewed clock still wins.
        removed[event["id"]] = {"why": event["why"], "by": event["by"], "at": event["at"]}
        entries.pop(event["id"], None)
    return {"entries": entries, "removed": removed}


def _initial() -> dict[str, Any]:
    return {"entries": {}, "removed": {}}


class PoisonList:
    """A dataset's poison list: read it, add to it, remove from it."""

    def __init__(self, lake: Lake, dataset: str) -> None:
        self.dataset = dataset
        self.log = EventLog(lake, KIND, dataset)
        self._unsnapshotted = 0

    def entries(self) -> list[Entry]:
        """The entries in force, oldest first."""
        folded = self.log.fold(_fold, _initial)
        self._unsnapshotted = folded.unsnapshotted
        state = folded.state
        found = [Entry.from_dict(record) for record in state["entries"].values()]
        return sorted(found, key=lambda entry: (entry.added_at, entry.id))

    def history(self) -> list[Event]:
        """Every addition and removal ever made, in order."""
        return self.log.events()

    def find(self, match: str, value: str) -> Entry | None:
        return next((e for e in self.entries() if (e.match, e.value) == (match, value)), None)

    def add(
        self,
        match: str,
        value: str,
        why: str,
        source: str,
        *,
        added_by: str | None = None,
        first_seen: Seen | None = None,
        size: int | None = None,
    ) -> Entry:
        """Add an entry; an entry in force that matches the same returns as it is (no new event),
        so a rerun that meets the same crash does not list the message twice.

        `size` (a fingerprint's message length in bytes, when the bytes are at hand) lets a job
        hash only the messages of that length instead of every message of every batch."""
        if match not in MATCHES:
            raise PoisonListError(f"match {match!r} must be one of {MATCHES}")
        if source not in SOURCES:
            raise PoisonListError(f"source {source!r} must be one of {SOURCES}")
        if match == "fingerprint" and not FINGERPRINT_PATTERN.match(value):
            raise PoisonListError(
                f"fingerprint {value!r} is not a SHA-256: give 64 lowercase hex digits "
                "(sha256sum of the line without its ending)"
            )
        if not value:
            raise PoisonListError("a key entry needs the unique key's value")
        if not why.strip():
            raise PoisonListError("say why the message is poison (--why): it becomes the reason's message")
        existing = self.find(match, value)
        if existing:
            return existing
        entry = Entry(
            id=secrets.token_hex(5), match=match, value=value, why=why.strip(), source=source,
            added_by=added_by or _who(), added_at=datetime.now(UTC).isoformat(), first_seen=first_seen,
            size=size if match == "fingerprint" else None,
        )
        self._write({"type": "added", "entry": entry.as_dict()})
        batch_logger(__name__, self.dataset, first_seen.batch_id if first_seen else "-").event(
            "poison_listed", entry=entry.id, match=match, value=value, source=source, by=entry.added_by,
        )
        return entry

    def remove(self, entry_id: str, why: str, *, removed_by: str | None = None) -> Entry:
        """Take an entry out of force; the removal is recorded, the entry's history kept."""
        entry = next((e for e in self.entries() if e.id == entry_id), None)
        if entry is None:
            raise PoisonListError(
                f"no entry {entry_id!r} in force on the poison list of {self.dataset!r}: "
                "`foodtaster poison ls` shows the ids"
            )
        by = removed_by or _who()
        self._write({"type": "removed", "id": entry_id, "why": why, "by": by})
        batch_logger(__name__, self.dataset, entry.first_seen.batch_id if entry.first_seen else "-").event(
            "poison_removed", entry=entry_id, match=entry.match, value=entry.value, by=by,
        )
        return entry

    def _write(self, event: Event) -> None:
        """Append after `entries()` was read; a long tail since the last snapshot is compacted, so
        every reader keeps folding a snapshot and a few events, not the whole history."""
        self.log.append(event)
        if self._unsnapshotted + 1 >= COMPACT_AFTER:
            self.compact()

    def compact(self) -> str | None:
        """Snapshot the list when its log grows (see EventLog.compact)."""
        return self.log.compact(_fold, _initial)


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in a container without /etc/passwd entry
        return "unknown"
