"""What the retry pass reads: attempts, next attempts and what is settled, from the dispositions log.

The dispositions log (foodtaster.state.dispositions) is the one record of a retryable row:
the job writes it `retrying` with `attempts` 0 and the first attempt's time (`next_at`);
each retry pass (foodtaster.engine.retry) writes `retrying` with one more attempt and the
next time, or `exhausted`, or `redriven` with where it was published. This module folds
that into the retry pass's view: nothing else keeps a counter, so two records cannot
disagree. Two passes that raced count the attempt they both made once (the latest event
sets the status); the DAG runs one pass a dataset at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from foodtaster.state.dispositions import EXHAUSTED, REDRIVEN, RETRYING, SETTLED, Dispositions
from foodtaster.state.lake import Lake
from foodtaster.state.second_chances import lineage_key


@dataclass(frozen=True)
class RetryState:
    attempts: dict[str, dict[str, Any]]  # lineage -> {"attempts": n, "at": when counted, "next_at": ISO}
    exhausted: dict[str, str]  # lineage -> when
    published: dict[str, str]  # lineage -> where (published later: a retry, a group release, a redrive)
    resolved: frozenset[str]  # published later, duplicate or purged: a poison among them releases its group

    def done(self) -> frozenset[str]:
        """Rows no retry touches again: resolved or exhausted."""
        return self.resolved | self.exhausted.keys()

    def retrying(self) -> dict[str, tuple[int, str | None]]:
        """Lineage -> (attempts made, next attempt's time) of the rows still retrying."""
        done = self.done()
        return {key: (entry["attempts"], entry["next_at"]) for key, entry in self.attempts.items()
                if key not in done}


def retry_state(lake: Lake, dataset: str) -> RetryState:
    """The retry view of a dataset's dispositions log."""
    attempts: dict[str, dict[str, Any]] = {}
    exhausted: dict[str, str] = {}
    published: dict[str, str] = {}
    resolved: set[str] = set()
    for row, status in Dispositions(lake, dataset).state():
        key = lineage_key(*row)
        if status.status == RETRYING or status.attempts:
            attempts[key] = {"attempts": status.attempts, "at": status.since, "next_at": status.next_at}
        if status.status == EXHAUSTED:
            exhausted[key] = status.since or ""
        if status.status == REDRIVEN:
            published[key] = status.where or ""
        if status.status in SETTLED:
            resolved.add(key)
    return RetryState(attempts, exhausted, published, frozenset(resolved))
