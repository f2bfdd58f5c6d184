"""Retry attempts of quarantined rows, and what later published them: `_state/retries/<dataset>/`.

A row quarantined only for retryable rules (foodtaster.engine.references) is `retrying`
from the moment it is written; nothing records that but its reasons. Each run of the
retry pass (foodtaster.engine.retry) then writes one event:

- `attempted`: rows re-evaluated and still failing, each with its attempt number;
- `exhausted`: rows that failed their last attempt (reason `retry.exhausted`);
- `published`: rows published later (a retry that passed, or a held message of a
  released group), with the partition they went to.

The fold keys everything by lineage key and keeps the highest attempt seen, so two
passes that raced give the same counter, and a pass rerun after a crash does not count
an attempt twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from foodtaster.state.events import Event, EventLog
from foodtaster.state.lake import Lake

KIND = "retries"
COMPACT_AFTER = 200


@dataclass(frozen=True)
class RetryState:
    attempts: dict[str, dict[str, Any]]  # lineage -> {"attempts": n, "at": ISO of the last}
    exhausted: dict[str, str]  # lineage -> when
    published: dict[str, str]  # lineage -> where

    def done(self) -> set[str]:
        """Rows no retry touches again."""
        return set(self.exhausted) | set(self.published)


def _fold(state: dict[str, Any], event: Event) -> dict[str, Any]:
    attempts, exhausted, published = (dict(state[k]) for k in ("attempts", "exhausted", "published"))
    if event["type"] == "attempted":
        for key, number in event["rows"].items():
            seen = attempts.get(key, {"attempts": 0, "at": event["at"]})
            if number >= seen["attempts"]:
                attempts[key] = {"attempts": number, "at": max(seen["at"], event["at"])}
    elif event["type"] == "exhausted":
        for key in event["rows"]:
            exhausted.setdefault(key, event["at"])
    elif event["type"] == "published":
        for key in event["rows"]:
            published.setdefault(key, event["where"])
    return {"attempts": attempts, "exhausted": exhausted, "published": published}


def _initial() -> dict[str, Any]:
    return {"attempts": {}, "exhausted": {}, "published": {}}


class RetryLog:
    def __init__(self, lake: Lake, dataset: str) -> None:
        self.log = EventLog(lake, KIND, dataset)

    def state(self) -> RetryState:
        folded = self.log.fold(_fold, _initial)
        if folded.unsnapshotted >= COMPACT_AFTER:
            self.log.compact(_fold, _initial)
        return RetryState(**folded.state)

    def attempted(self, rows: dict[str, int], run_id: str, at: str) -> None:
        if rows:
            self.log.append({"type": "attempted", "rows": rows, "run_id": run_id, "at": at})

    def exhausted(self, rows: Iterable[str], run_id: str, at: str) -> None:
        keys = sorted(rows)
        if keys:
            self.log.append({"type": "exhausted", "rows": keys, "run_id": run_id, "at": at})

    def published(self, rows: Iterable[str], where: str, cause: str, run_id: str) -> None:
        keys = sorted(rows)
        if keys:
            self.log.append({"type": "published", "rows": keys, "where": where, "cause": cause,
                             "run_id": run_id})
