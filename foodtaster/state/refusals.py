"""Runs that refused their batch (`foodtaster.errors.refusal`), kept so a person finds them.

A refused run records nothing in the ledger (it judged nothing); this append-only log under
`_state/refusals/<dataset>/` (`foodtaster.state.events`) keeps each refusal: the run, the batch
it landed (none when it was refused before landing), the task, the reason with what to do
instead, when. A refusal is filed under its run, never under a batch it only named: a batch
id in a refused conf is the batch of another run, often one that published fine. Its alert is
`_state/alerts/<dataset>/<alert_stem(run_id)>.html`. The batches page lists them beside the
ledger's batches.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any

from foodtaster.state.events import EventLog
from foodtaster.state.lake import Lake

KIND = "refusals"


@dataclass(frozen=True)
class Refusal:
    batch_id: str | None  # the batch this run landed before it was refused; None before landing
    batch_date: str | None  # the inbox date of the run, when it had one
    task: str
    reason: str  # why, and what to do instead
    dag_id: str
    run_id: str
    at: str = ""  # when it was recorded (UTC, ISO), set by the log

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Refusal:
        return cls(batch_id=event.get("batch_id"), batch_date=event.get("batch_date"),
                   task=str(event["task"]), reason=str(event["reason"]), dag_id=str(event["dag_id"]),
                   run_id=str(event["run_id"]), at=str(event.get("at") or ""))


def record_refusal(lake: Lake, dataset: str, refusal: Refusal) -> str:
    """Append the refusal; returns its event name."""
    event = {key: value for key, value in asdict(refusal).items() if key != "at"}
    return EventLog(lake, KIND, dataset).append(event)


def refusals(lake: Lake, dataset: str) -> list[Refusal]:
    """Every refusal of the dataset, oldest first."""
    return [Refusal.from_event(event) for event in EventLog(lake, KIND, dataset).events()]


def alert_stem(run_id: str) -> str:
    """The name (without `.html`/`.json`) of a refused run's alert file: the run id in the
    characters a file name and an address keep as they are, and a hash of the whole id, so
    two runs never share an alert."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", run_id)[:80]
    return f"refused-{readable}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}"
