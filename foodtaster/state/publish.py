"""Publishing: staged valid rows become visible to consumers in one swap."""

from __future__ import annotations

from datetime import UTC, datetime

from foodtaster.errors import Failed
from foodtaster.logs import batch_logger
from foodtaster.state.lake import (
    Lake,
    exists,
    fault_point,
    read_json,
    remove_dir,
    remove_empty_parents,
    run_id_from,
    swap_in,
    write_json,
)
from foodtaster.state.lease import batch_lease
from foodtaster.summary import BatchSummary


class UnjudgedRunError(Failed):
    """The rows staged now are not the run the gate judged: another run staged its own since."""


def publish_batch(lake: Lake, dataset: str, batch_date: str, batch_id: str) -> str:
    """Swap the staged valid partition in for the published one; returns where it now lies.

    Publishing a batch again replaces its partition, so reruns never duplicate rows; a reader
    sees the old partition or the new one (`swap_in`). The caller holds the batch's lease.
    """
    staged = lake.staged_valid(dataset, batch_date, batch_id)
    target = lake.valid(dataset, batch_date, batch_id)
    if not exists(staged):
        raise FileNotFoundError(f"nothing staged for {dataset} batch {batch_id} at {staged}")
    swap_in(staged, target)
    fault_point("published")
    remove_dir(staged)  # the previous publication, if there was one
    # `_staging/batch_date=<date>/` would otherwise stay behind, empty, in every listing
    remove_empty_parents(staged, levels=2)
    batch_logger(__name__, dataset, batch_id).event("published", path=target)
    return target


def publish_judged(lake: Lake, dataset: str, batch_date: str, batch_id: str, run_id: str | None,
                   summary_uri: str) -> str:
    """Publish the run `run_id` the gate judged, under the batch's lease, then say so in its
    summary (the last thing written); returns where the rows now lie. Refused (UnjudgedRunError)
    if another run's rows were staged since."""
    holder = run_id_from(f"publish-{run_id or 'run'}")
    with batch_lease(lake, dataset, batch_id, holder):
        summary = BatchSummary.from_json(read_json(summary_uri))
        if summary.run_id != run_id:
            raise UnjudgedRunError(
                f"{dataset} batch {batch_id}: the gate judged run {run_id} but run "
                f"{summary.run_id} is staged now; not publishing rows nobody judged"
            )
        path = publish_batch(lake, dataset, batch_date, batch_id)
        write_json(summary_uri, summary.with_changes(
            published=True, published_at=datetime.now(UTC).isoformat(timespec="seconds")).to_json())
    return path
