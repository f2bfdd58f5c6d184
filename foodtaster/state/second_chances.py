"""The one place the retry pass and the group release meet the dispositions log.

The dispositions log (`foodtaster.state.dispositions`, built on the `redrive` branch)
keeps each quarantined row's status (quarantined, retrying, redriven, exhausted,
listed, purged) keyed by its lineage. Until it is merged, the retry pass keeps its
own attempts and publications (foodtaster.state.retries) and these functions read
and write nothing more; once it is, they are where the two meet, and nothing else
in this branch changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from foodtaster.state.lake import Lake

RELEASING_STATUSES = ("redriven", "purged")  # a poison message in one of them releases its group


def lineage_key(batch_id: str, source_file: str, line_number: int | None) -> str:
    """A row's identity across raw, valid and quarantine, as one string."""
    return f"{batch_id}|{source_file}|{'' if line_number is None else line_number}"


def zone_root(lake: Lake, zone: str, dataset: str) -> str:
    """`<zone>/<dataset>` of the lake: every partition of a dataset in `valid` or `quarantine`."""
    return f"{lake.root.rstrip('/')}/{zone}/{dataset}"


def _dispositions() -> Any | None:
    try:
        return importlib.import_module("foodtaster.state.dispositions")
    except ImportError:  # not merged yet
        return None


def resolved_lineages(lake: Lake, dataset: str) -> set[str]:
    """Quarantined rows the dispositions log says were redriven or purged (empty until it lands)."""
    module = _dispositions()
    statuses = getattr(module, "current_statuses", None)
    if statuses is None:
        return set()
    return {key for key, status in statuses(lake, dataset).items() if status in RELEASING_STATUSES}


def record_status(lake: Lake, dataset: str, status: str, lineages: Iterable[str], **detail: Any) -> None:
    """Tell the dispositions log (when there is one) that rows moved to `status`."""
    module = _dispositions()
    record = getattr(module, "record", None)
    keys = sorted(lineages)
    if record is not None and keys:
        record(lake, dataset, status, keys, **detail)
