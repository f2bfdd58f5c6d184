"""End-to-end helpers: a real Airflow (metadata DB, `airflow dags test` or `airflow
standalone`) running the real DAG and Spark job over batches from the sample generator.

Kept small for a 2-core machine: batches of a few hundred messages, Spark on local[2]
with 2 shuffle partitions, one Airflow home per test module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from foodtaster.state.lake import Lake
from foodtaster_dev.localenv import LocalAirflow, postgres_database
from foodtaster_dev.sample import generate_batch

DATASET = "orders"
DAG_ID = "foodtaster_orders"
VALID_URI = "foodtaster://valid/orders"
MESSAGES = 200
CLEAN = {"poison_rate": 0.0, "kinds": []}
# only html_payload poison: every quarantined sample carries <script>; 5% >= alert_rate 2%
ALERTING = {"poison_rate": 0.05, "kinds": ["html_payload"]}
# a third of the messages poison: >= hold_rate 20%
HOLDING = {"poison_rate": 0.35, "kinds": ["truncated_json", "unknown_enum", "out_of_range"]}


def metadata_database(prefix: str, template: str) -> str:
    """A fresh PostgreSQL database for Airflow's metadata, migrated already: a copy of
    `template` (the session's `airflow_postgres_template`)."""
    return postgres_database(f"{prefix}_{os.getpid()}", fresh=True, template=template)


def fill_inbox(lake: str, date: str, *, dataset: str = DATASET, seed: int = 7,
               messages: int = MESSAGES, **mix: Any):
    """Drop a generated batch of `date` into the dataset's inbox."""
    return generate_batch(Lake(lake).inbox(dataset, date), messages=messages, seed=seed,
                          batch_date=date, files=2, gzip_files=1, **mix)


def partitions(lake: str, zone: str, dataset: str = DATASET) -> list[str]:
    """`batch_date=<d>/batch_id=<id>` of every landed batch (`raw`), or of every batch main of a
    table holds (`valid`, `quarantine`)."""
    if zone == "raw":
        root = Path(lake) / zone / dataset
        return sorted(f"{p.parent.name}/{p.name}" for p in root.glob("batch_date=*/batch_id=*") if p.is_dir())
    from foodtaster.state.lake import Lake
    from foodtaster.state.tables import DatasetTables

    return [f"batch_date={b.batch_date}/batch_id={b.batch_id}"
            for b in DatasetTables(Lake(lake), dataset).batches(zone)]


def staged(lake, dataset: str, batch_id: str) -> bool:
    """Whether the batch's valid rows wait on its audit branch (held, or not yet published)."""
    from foodtaster.state.tables import VALID, DatasetTables, audit_branch

    table = DatasetTables(lake, dataset).load(VALID)
    return table is not None and audit_branch(batch_id) in table.metadata.refs


def asset_events(af: LocalAirflow, uri: str) -> list[dict[str, Any]]:
    """The Asset events of `uri` in the metadata DB, oldest first."""
    rows = af.query(
        "SELECT e.extra, e.source_dag_id AS dag_id, e.source_run_id AS run_id,"
        " e.source_task_id AS task_id FROM asset_event e JOIN asset a ON a.id = e.asset_id"
        " WHERE a.uri = :uri ORDER BY e.id", uri=uri)
    # a JSON column: text in SQLite, already a dict from PostgreSQL
    return [{**row, "extra": json.loads(row["extra"]) if isinstance(row["extra"], str) else row["extra"]}
            for row in rows]
