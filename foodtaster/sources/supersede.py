"""A held batch's delivery replaced by a correction: new inbox files for a batch that was
judged and held land only when the inbox folder says so (`_SUPERSEDES`, with why and by whom),
and then replace the batch's landed files (`foodtaster.sources.inbox.land_batch`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import fsspec

from foodtaster.errors import UsageError
from foodtaster.sources.raw_batch import LandingError, Supersession, file_from_dict
from foodtaster.state.lake import Lake, exists, read_json

SUPERSEDES = "_SUPERSEDES"  # marker in an inbox folder: its new files replace the batch's landed ones


class SupersedeError(LandingError):
    """New files for a held batch without a `_SUPERSEDES` marker: they would mix a poisoned
    delivery with its correction. The message says how to replace the delivery on purpose."""

    exit_code = UsageError.exit_code  # the producer's delivery, not an outage: say what to do


def held(lake: Lake, dataset: str, batch_id: str) -> bool:
    """The batch was judged and held (its summary says: not published)."""
    uri = lake.summary(dataset, batch_id)
    if not exists(uri):
        return False
    summary = read_json(uri)
    return not summary.get("published") and (summary.get("verdict") or {}).get("publish") is False


def supersede(
    fs: fsspec.AbstractFileSystem, inbox_path: str, inbox_rel: str, dataset: str, batch_id: str,
    mine: list[dict[str, Any]], new: list[dict[str, Any]], now: datetime | None,
) -> Supersession:
    """New files for a held batch: with the inbox's `_SUPERSEDES` marker they replace its landed
    files (marked `superseded` in the bookmark, so never landed again); without it, refused."""
    marker = f"{inbox_path}/{SUPERSEDES}"
    old, arrived = sorted(c["name"] for c in mine), sorted(c["name"] for c in new)
    if not fs.exists(marker):
        raise SupersedeError(
            f"{dataset} batch {batch_id} was held and holds {old}; new files {arrived} arrived in "
            f"{inbox_rel}. Landing them would mix the poisoned delivery with its correction. To "
            f"replace the delivery, write {inbox_rel}/{SUPERSEDES} (JSON: {{\"why\": \"...\", "
            f"\"by\": \"...\"}}) and run the batch again; see docs/operations.md"
        )
    with fs.open(marker, "r", encoding="utf-8") as handle:
        text = handle.read().strip()
    try:
        said = json.loads(text) if text else {}
    except json.JSONDecodeError:
        said = {"why": text}
    if not isinstance(said, dict) or not str(said.get("why", "")).strip():
        raise SupersedeError(f"{inbox_rel}/{SUPERSEDES} must say why: JSON {{\"why\": \"...\"}}")
    at = (now or datetime.now(UTC)).astimezone(UTC).isoformat()
    for claim in mine:
        claim["superseded"] = at
    return Supersession(at=at, why=str(said["why"]).strip(), by=str(said.get("by") or "unknown"),
                        files=tuple(file_from_dict(claim) for claim in mine), by_files=tuple(arrived))
