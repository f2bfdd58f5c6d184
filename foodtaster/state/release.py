"""Release a held batch: publish its valid rows because an operator says so.

A batch is held when its quarantine rate or its batch gate says the feed may be broken;
its valid rows wait on its audit branch of the valid table (`audit-<batch>`). When an
operator has looked and decides they are good (the poison was isolated, the gate's failure is
understood), `release_batch` publishes them as the publish task would (`publish_judged`: main
moved to the branch, under the batch's lease, the run the summary names), marks the summary, and
rewrites the batch's ledger record as `published` with `released: {by, why, at}`, so the ledger
tells that the batch was held first and who let it out. No Spark: a catalog commit and JSON.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.logs import batch_logger
from foodtaster.state import ledger
from foodtaster.state.lake import Lake, check_batch_id, exists, read_json
from foodtaster.state.publish import NothingStaged, publish_judged
from foodtaster.summary import BatchSummary


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
    summary = BatchSummary.from_json(read_json(summary_uri))
    if summary.published:
        raise ReleaseError(f"{dataset} batch {batch_id} is already published: nothing to release")
    batch_date = summary.batch_date
    released = ledger.Released(by=by, why=why.strip(), at=datetime.now(UTC).isoformat(timespec="seconds"))
    try:
        summary = publish_judged(lake, dataset, batch_id, summary.run_id, summary_uri,
                                 {"by": released["by"], "why": released["why"], "at": released["at"]})
    except NothingStaged as err:
        raise ReleaseError(f"{dataset} batch {batch_id}: no valid rows waiting to be released: "
                           f"{err}") from err
    assert summary.tables is not None
    where = f"{summary.tables.valid}@{summary.tables.tag}"
    found = [e for e in ledger.batch_entries(lake, dataset) if e["batch_id"] == batch_id]
    ledger.record_batch(lake, dataset, ledger.released_entry(found[-1] if found else None, summary, released))
    ledger.record_redrive(lake, dataset, {
        "batch_id": f"release-{batch_id}"[:64], "kind": "release", "released_batch": batch_id,
        "batch_date": batch_date, "by": by, "why": released["why"], "published": {batch_date: where},
        "counts": {"published": summary.valid},
    })
    batch_logger(__name__, dataset, batch_id).event("released", by=by, why=released["why"], table=where,
                                                    valid=summary.valid)
    return {"dataset": dataset, "batch_id": batch_id, "batch_date": batch_date, "table": summary.tables.valid,
            "snapshot_id": summary.tables.published_snapshot, "tag": summary.tables.tag,
            "valid": summary.valid, "released": released}
