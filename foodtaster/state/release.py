"""Release a held batch: publish its staged valid rows because an operator says so.

A batch is held when its quarantine rate or its batch gate says the feed may be broken;
its valid rows wait under `valid/<dataset>/_staging/`. When an operator has looked and
decides they are good (the poison was isolated, the gate's failure is understood),
`release_batch` publishes them as the publish task would (`publish_batch`, under the
batch's lease, the run the summary names), marks the summary, and rewrites the batch's
ledger record as `published` with `released: {by, why, at}`, so the ledger tells
that the batch was held first and who let it out. No Spark: a folder swap and JSON.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.logs import batch_logger
from foodtaster.state import ledger
from foodtaster.state.lake import Lake, check_batch_id, exists, read_json, run_id_from, write_json
from foodtaster.state.lease import batch_lease
from foodtaster.state.publish import publish_batch


class ReleaseError(UsageError):
    """A batch that cannot be released; the message says why and what to do."""


def release_batch(lake: Lake, dataset: str, batch_id: str, why: str, by: str) -> dict[str, Any]:
    """Publish a held batch's staged valid rows; returns what the ledger recorded."""
    check_batch_id(batch_id)
    if not why.strip():
        raise ReleaseError("say why the batch is released (--why): the ledger records it")
    summary_uri = lake.summary(dataset, batch_id)
    if not exists(summary_uri):
        raise ReleaseError(f"{dataset} batch {batch_id} has no summary at {summary_uri}: "
                           "`foodtaster batches` lists the batches")
    summary = read_json(summary_uri)
    if summary.get("published"):
        raise ReleaseError(f"{dataset} batch {batch_id} is already published: nothing to release")
    batch_date = summary["batch_date"]
    if not exists(lake.staged_valid(dataset, batch_date, batch_id)):
        raise ReleaseError(f"{dataset} batch {batch_id}: no staged valid rows to release "
                           f"(expected at {lake.staged_valid(dataset, batch_date, batch_id)})")
    released = {"by": by, "why": why.strip(), "at": datetime.now(UTC).isoformat(timespec="seconds")}
    with batch_lease(lake, dataset, batch_id, run_id_from(f"release-{batch_id}")):
        path = publish_batch(lake, dataset, batch_date, batch_id)
        write_json(summary_uri, {**summary, "published": True, "published_at": released["at"],
                                 "released": released})
    entry = _ledger_entry(lake, dataset, summary, released)
    ledger.record_batch(lake, dataset, entry)
    ledger.record_redrive(lake, dataset, {
        "batch_id": f"release-{batch_id}"[:64], "kind": "release", "released_batch": batch_id,
        "batch_date": batch_date, "by": by, "why": released["why"], "published": {batch_date: path},
        "counts": {"published": summary["valid"]},
    })
    batch_logger(__name__, dataset, batch_id).event("released", by=by, why=released["why"], path=path,
                                                    valid=summary["valid"])
    return {"dataset": dataset, "batch_id": batch_id, "batch_date": batch_date, "path": path,
            "valid": summary["valid"], "released": released}


def _ledger_entry(lake: Lake, dataset: str, summary: dict[str, Any],
                  released: dict[str, str]) -> dict[str, Any]:
    """The batch's ledger record, now published; built from the summary when the batch was
    run without the DAG (no record yet)."""
    found = [e for e in ledger.batch_entries(lake, dataset) if e["batch_id"] == summary["batch_id"]]
    entry = dict(found[-1]) if found else {
        "batch_id": summary["batch_id"], "batch_date": summary["batch_date"],
        "messages": summary["messages"], "valid": summary["valid"], "quarantined": summary["quarantined"],
        "duplicates_dropped": summary.get("duplicates_dropped", 0),
        "quarantine_rate": summary["quarantine_rate"], "severity": "critical",
        "why": list((summary.get("verdict") or {}).get("why") or []), "timings": summary.get("timings", {}),
    }
    entry.pop("dataset", None)
    entry.pop("recorded_at", None)
    entry["held_why"] = entry.get("why", [])
    entry.update({"verdict": "published", "released": released,
                  "why": [*entry.get("why", []), f"released by {released['by']}: {released['why']}"]})
    return entry
