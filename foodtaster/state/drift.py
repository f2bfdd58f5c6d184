"""The drift log: one event a batch under `_state/drift/<dataset>/` (`foodtaster.state.events`),
written by the job at the end of the batch, after its data. The fold keeps each batch's latest
event, so a rerun replaces its counts rather than adding to them (`foodtaster.drift.fold`)."""

from __future__ import annotations

from dataclasses import dataclass

from foodtaster import drift
from foodtaster.drift import BatchDrift
from foodtaster.state.events import EventLog
from foodtaster.state.lake import Lake

KIND = "drift"
COMPACT_AFTER = 100  # events after the latest snapshot before a writer takes a new one (one a batch)


@dataclass(frozen=True)
class DriftLog:
    lake: Lake
    dataset: str

    @property
    def log(self) -> EventLog:
        return EventLog(self.lake, KIND, self.dataset)

    def record(self, batch: BatchDrift) -> str:
        """Append the batch's drift, and take a snapshot when `COMPACT_AFTER` events came after
        the latest; returns the event's name."""
        name = self.log.append(batch.to_json())
        if self.log.fold(drift.fold, drift.initial).unsnapshotted >= COMPACT_AFTER:
            self.compact()
        return name

    def batches(self) -> list[BatchDrift]:
        """Every batch recorded, its latest run's counts, in data order."""
        return drift.history(self.log.fold(drift.fold, drift.initial).state)

    def compact(self) -> str | None:
        return self.log.compact(drift.fold, drift.initial)
