"""The batch ledger: one JSON record a batch under `_state/ledger/<dataset>/`.

The ledger is where "nothing is lost" is written down (every batch's counts)
and where the self-pause is decided: `held_streak` counts held batches in a
row, like Service Broker counting rollbacks before it disables a queue. One
file a batch, so two batches finishing at once never overwrite each other's
record, and a rerun of a batch replaces its own record only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict, cast

import fsspec

from foodtaster.landing import LandingResult
from foodtaster.logs import batch_logger
from foodtaster.state.lake import Lake, check_batch_id, check_date, exists, read_json, write_json
from foodtaster.summary import BatchSummary, Decision

VERDICTS = ("published", "held", "empty")
REQUIRED_KEYS = (
    "batch_id", "batch_date", "messages", "valid", "quarantined", "duplicates_dropped",
    "quarantine_rate", "verdict", "severity", "why", "timings",
)


class Released(TypedDict):
    """An operator published a held batch: who, when, why."""

    by: str
    at: str
    why: str


class LedgerEntry(TypedDict):
    """One batch's record in the ledger, as its JSON file holds it (the keys are the document's):
    built here only, by `ledger_entry` for a pipeline run and `released_entry` for a release;
    `record_batch` adds `dataset` and `recorded_at`, `record_recall` the recall's counts."""

    batch_id: str
    batch_date: str
    messages: int
    valid: int
    quarantined: int
    duplicates_dropped: int
    quarantine_rate: float
    verdict: str  # one of VERDICTS
    severity: str
    why: list[str]
    timings: dict[str, Any]
    listed: NotRequired[int]
    dataset: NotRequired[str]
    recorded_at: NotRequired[str]
    landed_messages: NotRequired[int]
    files: NotRequired[int]
    unreadable_files: NotRequired[int]
    refused: NotRequired[list[dict[str, Any]]]  # inbox entries never read: symlinks
    reprocess: NotRequired[bool]
    superseded: NotRequired[dict[str, Any] | None]  # a corrected delivery replaced the landed one
    dag_id: NotRequired[str]
    run_id: NotRequired[str]
    top_reasons: NotRequired[list[list[Any]]]
    alerted: NotRequired[bool]
    alert_file: NotRequired[str | None]
    summary: NotRequired[str]
    held_why: NotRequired[list[str]]  # why it was held, before an operator released it
    released: NotRequired[Released]
    recalled: NotRequired[int]
    recalls: NotRequired[list[dict[str, Any]]]


def _batches_dir(lake: Lake, dataset: str) -> str:
    return lake.state("ledger", dataset, "batches")


def _disabled_uri(lake: Lake, dataset: str) -> str:
    return lake.state("ledger", dataset, "disabled.json")


def record_batch(lake: Lake, dataset: str, entry: LedgerEntry) -> None:
    """Record (or, for a rerun, replace) a batch's outcome.

    Refuses an incomplete entry: a ledger with holes cannot prove nothing was lost.
    `recorded_at` defaults to now (UTC).
    """
    missing = [key for key in REQUIRED_KEYS if key not in entry]  # an entry read back from JSON
    if missing:
        raise ValueError(f"ledger entry for dataset {dataset!r} lacks {missing}")
    if entry["verdict"] not in VERDICTS:
        raise ValueError(f"ledger verdict {entry['verdict']!r} must be one of {VERDICTS}")
    check_date(entry["batch_date"])
    batch_id = check_batch_id(entry["batch_id"])
    record = {"dataset": dataset, "recorded_at": datetime.now(UTC).isoformat(), **entry}
    write_json(f"{_batches_dir(lake, dataset)}/{batch_id}.json", record)


def batch_entry(lake: Lake, dataset: str, batch_id: str) -> LedgerEntry | None:
    """One batch's record, or None when the ledger has none (a batch run outside the pipeline)."""
    uri = f"{_batches_dir(lake, dataset)}/{check_batch_id(batch_id)}.json"
    return _read_entry(uri) if exists(uri) else None


def _read_entry(uri: str) -> LedgerEntry:
    return cast(LedgerEntry, read_json(uri))  # written by `record_batch` from a LedgerEntry


def record_recall(lake: Lake, dataset: str, batch_id: str, counts: dict[str, int],
                  recall: dict[str, Any]) -> LedgerEntry | None:
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
    entry.update(cast(LedgerEntry, counts))
    entry["recalls"] = [*recalls, recall]
    entry["quarantine_rate"] = round(counts["quarantined"] / messages, 6) if messages else 0.0
    write_json(f"{_batches_dir(lake, dataset)}/{check_batch_id(batch_id)}.json", entry)
    return entry


def batch_entries(lake: Lake, dataset: str) -> list[LedgerEntry]:
    """Every recorded batch, in data order: by batch_date, then batch_id.

    Data order rather than processing order, so a rerun of an old batch takes
    its own place in the history instead of becoming the newest batch.
    """
    fs, folder = fsspec.core.url_to_fs(_batches_dir(lake, dataset))
    if not fs.exists(folder):
        return []
    entries = [_read_entry(fs.unstrip_protocol(path)) for path in fs.glob(f"{folder}/*.json")]
    return sorted(entries, key=lambda entry: (entry["batch_date"], entry["batch_id"]))


def held_streak(lake: Lake, dataset: str) -> int:
    """How many of the most recent non-empty batches in a row were held."""
    return len(held_batches(lake, dataset))


def held_batches(lake: Lake, dataset: str) -> list[LedgerEntry]:
    """The records of the held streak: the most recent non-empty batches in a row that were
    held, oldest first.

    Empty batches neither extend nor break the streak: an idle day says nothing
    about whether the feed is still poisoned.
    """
    held: list[LedgerEntry] = []
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


def record_run(lake: Lake, dataset: str, entry: LedgerEntry, disable_after: int) -> Recorded:
    """Record a run's batch and say whether the self-pause is due: a held batch that makes
    the streak a multiple of `disable_after`, unless the dataset is paused already."""
    record_batch(lake, dataset, entry)
    if entry["verdict"] != "held":
        return Recorded(held_streak=0, pause_due=False)
    streak = held_streak(lake, dataset)
    return Recorded(streak, should_disable(streak, disable_after) and not is_disabled(lake, dataset))


def ledger_entry(landed: LandingResult, decision: Decision | None, published: bool,
                 alerted: dict[str, Any] | None, dag_id: str, run_id: str) -> LedgerEntry:
    """The ledger's record of a pipeline run, from what its tasks passed on (the landing, the
    decision read_verdict passed on, the publish and alert results): verdict `published`,
    `held` or `empty`."""
    landing = {
        "landed_messages": landed.messages,
        "files": len(landed.files),
        "unreadable_files": len(landed.unreadable),
        "refused": landed.refused,
        "reprocess": landed.reprocess,
        "superseded": landed.superseded,
        "dag_id": dag_id,
        "run_id": run_id,
    }
    if decision is None:
        return LedgerEntry(
            batch_id=landed.batch_id, batch_date=landed.batch_date, **landing,  # type: ignore[typeddict-item]
            messages=0, valid=0, quarantined=0, duplicates_dropped=0, quarantine_rate=0.0,
            verdict="empty", severity="ok", why=["no new files in the inbox"], timings={},
        )
    counts = decision.counts
    return LedgerEntry(
        batch_id=landed.batch_id, batch_date=landed.batch_date, **landing,  # type: ignore[typeddict-item]
        messages=counts["messages"], valid=counts["valid"], quarantined=counts["quarantined"],
        duplicates_dropped=counts["duplicates_dropped"], listed=counts["listed"],
        quarantine_rate=counts["quarantine_rate"],
        verdict="published" if published else "held",
        severity=decision.verdict.severity,
        why=list(decision.verdict.why),
        top_reasons=decision.top_reasons,
        alerted=bool(alerted),
        alert_file=(alerted or {}).get("file"),
        summary=decision.summary_path,
        timings=_summary_timings(decision.summary_path) or {},
    )


def released_entry(found: LedgerEntry | None, summary: BatchSummary, released: Released) -> LedgerEntry:
    """The batch's record once an operator released it: its pipeline record (`found`), or one
    built from its summary when the batch was run without the DAG, now `published`, with why
    it was held first and who let it out."""
    if found is not None:
        entry = cast(LedgerEntry, {k: v for k, v in found.items() if k not in ("dataset", "recorded_at")})
    else:
        entry = LedgerEntry(
            batch_id=summary.batch_id, batch_date=summary.batch_date, messages=summary.messages,
            valid=summary.valid, quarantined=summary.quarantined,
            duplicates_dropped=summary.duplicates_dropped, quarantine_rate=summary.quarantine_rate,
            verdict="held", severity="critical", why=list(summary.verdict.why), timings=summary.timings,
        )
    held_why = entry.get("why", [])
    entry["held_why"], entry["verdict"], entry["released"] = held_why, "published", released
    entry["why"] = [*held_why, f"released by {released['by']}: {released['why']}"]
    return entry


def pending_entry(summary: Mapping[str, Any], publish: bool) -> LedgerEntry:
    """A batch's summary (its JSON form) as the ledger will record it, before the ledger task
    does: for an alert's trend (`foodtaster.ops.trend.dataset_trend(pending=)`)."""
    reasons = sorted((summary.get("reasons") or {}).items(), key=lambda item: (-item[1], item[0]))
    verdict = summary.get("verdict") or {}
    return LedgerEntry(
        batch_id=summary["batch_id"], batch_date=summary["batch_date"],
        verdict="published" if publish else "held", messages=summary["messages"],
        valid=summary.get("valid", 0), quarantined=summary["quarantined"],
        duplicates_dropped=summary.get("duplicates_dropped", 0),
        quarantine_rate=summary["quarantine_rate"], severity=verdict.get("severity", "ok"),
        why=list(verdict.get("why") or ()), timings=summary.get("timings") or {},
        top_reasons=[list(item) for item in reasons[:5]],
    )


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
