"""Publishing: staged valid rows become visible to consumers in one swap."""

from __future__ import annotations

from foodtaster.logs import batch_logger
from foodtaster.state.lake import (
    Lake,
    exists,
    fault_point,
    remove_dir,
    remove_empty_parents,
    swap_in,
)


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
