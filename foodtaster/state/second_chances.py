"""The one place the retry pass and the group release meet the dispositions log.

The dispositions log (`foodtaster.state.dispositions`) keeps
each quarantined row's status (quarantined, retrying, redriven, duplicate, exhausted,
listed, purged), keyed by its lineage, with its history. The retry pass and the groups
write it only through `record_status` (rows became `retrying`, with attempts and the next
attempt's time, `redriven` with where, `exhausted`) and read it through one fold,
`foodtaster.state.retries.retry_state` (its `resolved`: rows redriven, found duplicate or
purged by anyone, which the retry pass leaves alone and which release a poison's group).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from foodtaster.state.dispositions import Dispositions
from foodtaster.state.lake import Lake


def lineage_key(batch_id: str, source_file: str, line_number: int | None) -> str:
    """A row's identity across raw, valid and quarantine, as one string."""
    return f"{batch_id}|{source_file}|{'' if line_number is None else line_number}"


def _lineage(key: str) -> tuple[str, str, int]:
    batch_id, rest = key.split("|", 1)
    source_file, _, line = rest.rpartition("|")
    return batch_id, source_file, int(line) if line else 0


def record_status(lake: Lake, dataset: str, status: str, lineages: Iterable[str], *, by: str,
                  run: str | None = None, why: str = "", **details: Any) -> None:
    """Tell the dispositions log that rows moved to `status`.
    `details`: `attempts`, `next_at`, `where` (one value, or a list aligned with `lineages`)."""
    keys = list(lineages)
    if not keys:
        return
    Dispositions(lake, dataset).record(status, [_lineage(k) for k in keys], by=by, run=run, why=why,
                                              **details)
