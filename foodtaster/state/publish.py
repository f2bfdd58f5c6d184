"""Publishing: staged valid rows become visible to consumers in one move."""

from __future__ import annotations

from foodtaster.logs import batch_logger
from foodtaster.state.lake import Lake, exists, replace_dir


def publish_batch(lake: Lake, dataset: str, batch_date: str, batch_id: str) -> str:
    """Move the staged valid partition over the published one; returns where it now lies.

    Publishing a batch again replaces its partition, so reruns never duplicate rows.
    """
    staged = lake.staged_valid(dataset, batch_date, batch_id)
    target = lake.valid(dataset, batch_date, batch_id)
    if not exists(staged):
        raise FileNotFoundError(f"nothing staged for {dataset} batch {batch_id} at {staged}")
    replace_dir(staged, target)
    batch_logger(__name__, dataset, batch_id).event("published", path=target)
    return target
