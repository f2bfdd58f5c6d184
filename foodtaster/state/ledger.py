"""The batch ledger: one JSON record a batch under `_state/ledger/<dataset>/`.

The ledger is where "nothing is lost" is written down (every batch's counts)
and where the self-pause is decided: `held_streak` counts held batches in a
row, like Service Broker counting rollbacks before it disables a queue. One
file a batch, so two batches finishing at once never overwrite each other's
record, and a rerun of a batch replaces its own record only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import fsspec

from foodtaster.logs import batch_logger
from foodtaster.state.lake import Lake, check_batch_id, check_date, exists, read_json, write_json
from foodtaster.summary import Decision

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
    """How many of the most recent non-empty batches in a row were held."""
    return len(held_batches(lake, dataset))


def held_batches(lake: Lake, dataset: str) -> list[dict[str, Any]]:
    """The records of the held streak: the most recent non-empty batches in a row that were
    held, oldest first.

    Empty batches neither extend nor break the streak: an idle day says nothing
    about whether the feed is still poisoned.
    """
    held: list[dict[str, Any]] = []
    for entry in reversed(batch_entries(lake, dataset)):
        if entry["verdict"] == "empty":
            continue
        if entry["verdict"] != "held":
            break
        held.append(entry)
    return held[::-1]


def should_disable(streak: int, disable_after: int) -> bool:
    """Every `disable_after` held batches in a row: once unpaused by an operator, a feed
    that stays poisoned gets that many more held batches before the next pause."""
    return streak > 0 and streak % disable_after == 0


@dataclass(frozen=True)
class Recorded:
    held_streak: int  # 0 unless the batch was held
    pause_due: bool  # the dataset must pause itself now


def record_run(lake: Lake, dataset: str, entry: dict[str, Any], disable_after: int) -> Recorded:
    """Record a run's batch and say whether the self-pause is due: a held batch that makes
    the streak a multiple of `disable_after`, unless the dataset is paused already."""
    record_batch(lake, dataset, entry)
    if entry["verdict"] != "held":
        return Recorded(held_streak=0, pause_due=False)
    streak = held_streak(lake, dataset)
    return Recorded(streak, should_disable(streak, disable_after) and not is_disabled(lake, dataset))


def ledger_entry(landed: dict[str, Any], decision: dict[str, Any] | None,
                 published: dict[str, Any] | None, alerted: dict[str, Any] | None,
                 dag_id: str, run_id: str) -> dict[str, Any]:
    """The ledger's record of a pipeline run, from what its tasks passed on (the landing, the
    gate's decision, the publish and alert results): verdict `published`, `held` or `empty`."""
    entry: dict[str, Any] = {
        "batch_id": landed["batch_id"],
        "batch_date": landed["batch_date"],
        "landed_messages": landed["messages"],
        "files": len(landed["files"]),
        "unreadable_files": len(landed["unreadable"]),
        "refused": landed.get("refused", []),  # inbox entries never read: symlinks
        "reprocess": landed.get("reprocess", False),
        "superseded": landed.get("superseded"),  # a corrected delivery replaced the landed one
        "dag_id": dag_id,
        "run_id": run_id,
    }
    if decision is None:
        entry.update({
            "messages": 0, "valid": 0, "quarantined": 0, "duplicates_dropped": 0,
            "quarantine_rate": 0.0, "verdict": "empty", "severity": "ok",
            "why": ["no new files in the inbox"], "timings": {},
        })
        return entry
    judged = Decision.from_json(decision)
    entry.update(judged.counts)
    entry.update({
        "verdict": "published" if published else "held",
        "severity": judged.verdict.severity,
        "why": list(judged.verdict.why),
        "top_reasons": judged.top_reasons,
        "alerted": bool(alerted),
        "alert_file": (alerted or {}).get("file"),
        "summary": judged.summary_path,
        "timings": _summary_timings(judged.summary_path) or {},
    })
    return entry


def _summary_timings(uri: str | None) -> dict[str, Any] | None:
    return read_json(uri).get("timings") if uri and exists(uri) else None


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


def re_enable(lake: Lake, dataset: str, batch_id: str) -> bool:
    """End the dataset's self-pause, if it paused itself: its DAG runs again, so an operator
    unpaused it. Logged with the batch the first run after the pause landed, and the pause's
    reason. False when the dataset was not paused."""
    uri = _disabled_uri(lake, dataset)
    if not exists(uri):
        return False
    pause = read_json(uri)
    clear_disabled(lake, dataset)
    batch_logger(__name__, dataset, batch_id).warning(
        "event=re_enabled the DAG runs again after its self-pause of %s (%s)",
        pause.get("disabled_at"), pause.get("reason"),
    )
    return True


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
