"""The batch ledger: one JSON record a batch under `_state/ledger/<dataset>/`.

The ledger is where "nothing is lost" is written down (every batch's counts)
and where the self-pause is decided: `held_streak` counts held batches in a
row, like Service Broker counting rollbacks before it disables a queue. One
file a batch, so two batches finishing at once never overwrite each other's
record, and a rerun of a batch replaces its own record only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import fsspec

from foodtaster.state.lake import Lake, check_batch_id, check_date, exists, read_json, write_json

VERDICTS = ("published", "held", "empty")
REQUIRED_KEYS = (
    "batch_id", "batch_date", "messages", "valid", "quarantined", "duplicates_dropped",
    "quarantine_rate", "verdict", "severity", "why", "timings",
)


def _batches_dir(lake: Lake, dataset: str) -> str:
    return lake.state("ledger", dataset, "batches")


def _disabled_uri(lake: Lake, dataset: str) -> str:
    return lake.state("ledger", dataset, "disabled.json")


def record_batch(lake: Lake, dataset: str, entry: dict[str, Any]) -> None:
    """Record (or, for a rerun, replace) a batch's outcome.

    Refuses an incomplete entry: a ledger with holes cannot prove nothing was lost.
    `recorded_at` defaults to now (UTC).
    """
    missing = [key for key in REQUIRED_KEYS if key not in entry]
    if missing:
        raise ValueError(f"ledger entry for dataset {dataset!r} lacks {missing}")
    if entry["verdict"] not in VERDICTS:
        raise ValueError(f"ledger verdict {entry['verdict']!r} must be one of {VERDICTS}")
    check_date(entry["batch_date"])
    batch_id = check_batch_id(entry["batch_id"])
    record = {"dataset": dataset, "recorded_at": datetime.now(UTC).isoformat(), **entry}
    write_json(f"{_batches_dir(lake, dataset)}/{batch_id}.json", record)


def batch_entry(lake: Lake, dataset: str, batch_id: str) -> dict[str, Any] | None:
    """One batch's record, or None when the ledger has none (a batch run outside the pipeline)."""
    uri = f"{_batches_dir(lake, dataset)}/{check_batch_id(batch_id)}.json"
    return read_json(uri) if exists(uri) else None


def record_recall(lake: Lake, dataset: str, batch_id: str, counts: dict[str, int],
                  recall: dict[str, Any]) -> dict[str, Any] | None:
    """Write a recall into the batch's record: the counts as they are after it (`valid`,
    `quarantined`, `recalled`, from the partitions) and the recall itself under `recalls`.

    Idempotent: counts are set, not added to, and a recall of the same entry and place is
    kept once, so finishing an interrupted recall again records it once. Returns the new
    record; None when the ledger has no record of the batch (nothing to correct).
    """
    entry = batch_entry(lake, dataset, batch_id)
    if entry is None:
        return None
    place = (recall["entry"], recall["source_file"], recall["line_number"])
    recalls = [r for r in entry.get("recalls", [])
               if (r["entry"], r["source_file"], r["line_number"]) != place]
    messages = entry["messages"]
    entry.update(counts, recalls=[*recalls, recall],
                 quarantine_rate=round(counts["quarantined"] / messages, 6) if messages else 0.0)
    write_json(f"{_batches_dir(lake, dataset)}/{check_batch_id(batch_id)}.json", entry)
    return entry


def batch_entries(lake: Lake, dataset: str) -> list[dict[str, Any]]:
    """Every recorded batch, in data order: by batch_date, then batch_id.

    Data order rather than processing order, so a rerun of an old batch takes
    its own place in the history instead of becoming the newest batch.
    """
    fs, folder = fsspec.core.url_to_fs(_batches_dir(lake, dataset))
    if not fs.exists(folder):
        return []
    entries = [read_json(fs.unstrip_protocol(path)) for path in fs.glob(f"{folder}/*.json")]
    return sorted(entries, key=lambda entry: (entry["batch_date"], entry["batch_id"]))


def held_streak(lake: Lake, dataset: str) -> int:
    """How many of the most recent non-empty batches in a row were held.

    Empty batches neither extend nor break the streak: an idle day says nothing
    about whether the feed is still poisoned.
    """
    streak = 0
    for entry in reversed(batch_entries(lake, dataset)):
        if entry["verdict"] == "empty":
            continue
        if entry["verdict"] != "held":
            break
        streak += 1
    return streak


def record_disabled(lake: Lake, dataset: str, reason: str) -> None:
    """Remember that the dataset paused itself, and why, until an operator clears it."""
    write_json(
        _disabled_uri(lake, dataset),
        {"dataset": dataset, "reason": reason, "disabled_at": datetime.now(UTC).isoformat()},
    )


def clear_disabled(lake: Lake, dataset: str) -> None:
    """Forget the self-pause (the operator re-enabled the dataset); a no-op if not paused."""
    fs, path = fsspec.core.url_to_fs(_disabled_uri(lake, dataset))
    if fs.exists(path):
        fs.rm(path)


def is_disabled(lake: Lake, dataset: str) -> bool:
    return exists(_disabled_uri(lake, dataset))


def _redrives_dir(lake: Lake, dataset: str) -> str:
    return lake.state("ledger", dataset, "redrives")


def record_redrive(lake: Lake, dataset: str, report: dict[str, Any]) -> None:
    """Record an applied redrive or release (`report["batch_id"]`: `redrive-<id>` or
    `release-<batch>`): what was selected, by whom and why, what moved, where it went."""
    batch_id = check_batch_id(report["batch_id"])
    write_json(f"{_redrives_dir(lake, dataset)}/{batch_id}.json",
               {"dataset": dataset, "recorded_at": datetime.now(UTC).isoformat(), **report})


def redrive_entries(lake: Lake, dataset: str) -> list[dict[str, Any]]:
    """Every recorded redrive and release, in the order they finished."""
    fs, folder = fsspec.core.url_to_fs(_redrives_dir(lake, dataset))
    if not fs.exists(folder):
        return []
    entries = [read_json(fs.unstrip_protocol(path)) for path in fs.glob(f"{folder}/*.json")]
    return sorted(entries, key=lambda entry: entry["recorded_at"])
