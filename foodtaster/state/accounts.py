"""Nothing lost, nothing twice, after every later operation: a batch's accounts, from the lake.

For each batch (its summary, the tables, the dispositions log; pyiceberg, no JVM):

    messages landed = valid (the batch's own, published on main or waiting on its audit branch)
                    + redriven (its rows published later by a redrive or a retry)
                    + still quarantined
                    + duplicates dropped (by the batch's run, and on a redrive)
                    + purged

and the rows redriven, as the dispositions log says, are the rows of this batch found in the
valid table's `redrive-*` batches: a redrive that published without recording (or recorded
without publishing) shows here. `check_accounts` raises on any batch that does not add up.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow.compute as pc

from foodtaster.errors import FoodtasterError
from foodtaster.state.browse import batches, read_batch
from foodtaster.state.dispositions import DUPLICATE, PURGED, REDRIVEN, Dispositions
from foodtaster.state.lake import Lake, exists, read_json
from foodtaster.state.tables import MAIN, QUARANTINE, VALID, DatasetTables, audit_branch

REDRIVE_PREFIX = "redrive-"


class AccountsDoNotAddUp(FoodtasterError, AssertionError):
    """A batch whose messages are not all valid, quarantined, dropped or purged, once each."""


def batch_accounts(lake: Lake, dataset: str) -> dict[str, dict[str, Any]]:
    """{batch id: its accounts} for every batch with a summary."""
    state = Dispositions(lake, dataset).state()
    redriven_rows: Counter[str] = Counter()
    for part in batches(lake, VALID, dataset):
        if part.batch_id.startswith(REDRIVE_PREFIX):
            origins = read_batch(lake, VALID, dataset, part.batch_id, ["_batch_id"]).column("_batch_id")
            redriven_rows.update(dict(zip(*(c.to_pylist() for c in pc.value_counts(origins).flatten()),
                                          strict=True)))
    accounts = {}
    for part in batches(lake, QUARANTINE, dataset):
        summary_uri = lake.summary(dataset, part.batch_id)
        if not exists(summary_uri):
            continue
        summary = read_json(summary_uri)
        counts = state.counts(part.batch_id)
        own = _own_valid(lake, dataset, part.batch_id)
        disposed = counts.get(REDRIVEN, 0) + counts.get(DUPLICATE, 0) + counts.get(PURGED, 0)
        entry = {
            "messages": summary["messages"], "valid": own, "redriven": redriven_rows.get(part.batch_id, 0),
            "recorded_redriven": counts.get(REDRIVEN, 0),
            "quarantined": part.rows - disposed,
            "duplicates_dropped": summary.get("duplicates_dropped", 0) + counts.get(DUPLICATE, 0),
            "purged": counts.get(PURGED, 0),
        }
        entry["accounted"] = (entry["valid"] + entry["redriven"] + entry["quarantined"]
                              + entry["duplicates_dropped"] + entry["purged"])
        accounts[part.batch_id] = entry
    return accounts


def _own_valid(lake: Lake, dataset: str, batch_id: str) -> int:
    """The batch's own valid rows: on its audit branch while it waits there (a held batch, or a
    rerun not yet published), else published on main."""
    tables = DatasetTables(lake, dataset)
    table = tables.load(VALID)
    if table is None:
        return 0
    branch = audit_branch(batch_id)
    found = tables.batch(VALID, batch_id, branch if table.snapshot_by_name(branch) else MAIN, table)
    return found.rows if found is not None else 0


def check_accounts(lake: Lake, dataset: str) -> dict[str, dict[str, Any]]:
    """`batch_accounts`, raising `AccountsDoNotAddUp` on the first batch that does not add up."""
    accounts = batch_accounts(lake, dataset)
    for batch_id, entry in accounts.items():
        if entry["accounted"] != entry["messages"] or entry["redriven"] != entry["recorded_redriven"]:
            raise AccountsDoNotAddUp(f"{dataset} batch {batch_id}: {entry}")
    return accounts
