"""`make demo`'s nested datasets: order events in a CloudEvents envelope (`contracts/order_events.py`,
a pandera model), a payment provider's charge webhooks (`contracts/payment_events.schema.json`,
the provider's JSON Schema) and a carrier's parcel scans (`contracts/shipments.odcs.yaml`, an ODCS
data contract with a key of two properties and a quality rule the batch gate adds).

One generated day of each, with every nested kind of poison, goes through its DAG; the demo
prints the verdict, one quarantined message with the reasons naming the failing elements
(`data.lines[2].qty`) or the JSON Schema keyword and path that failed
(`data.object.refunds.data[].amount.exclusiveMinimum(0)`), and the nested columns of the valid
rows as a consumer reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foodtaster.lake_paths import relative_to_lake
from foodtaster.privacy import Masker
from foodtaster.registry import get_dataset
from foodtaster.sources.raw_batch import batch_id_for
from foodtaster.state.lake import Lake
from foodtaster_dev.localenv import LocalAirflow

DATASET = "order_events"
SCHEMA_DATASET = "payment_events"
ODCS_DATASET = "shipments"
ODCS_MESSAGES = 100  # few: a redelivery, a conflicting pair and each poison kind, under hold_rate
DATE = "2026-11-20"
MESSAGES = 400


def nested_demo(af: LocalAirflow, lake: Lake, logs: Path) -> int:
    """Run the nested datasets' DAGs on a generated day and print what happened; 1 if a run failed."""
    from foodtaster_dev.sample_events import generate_events
    from foodtaster_dev.sample_payments import generate_payments
    from foodtaster_dev.sample_shipments import generate_shipments

    events = generate_events(lake.inbox(DATASET, DATE), messages=MESSAGES, batch_date=DATE,
                             poison_rate=0.1, seed=20)
    failed = _run(af, lake, logs, DATASET, f"{events.messages} order events in a CloudEvents envelope",
                  "contracts/order_events.py", _element_example)
    charges = generate_payments(lake.inbox(SCHEMA_DATASET, DATE), messages=MESSAGES, batch_date=DATE,
                                poison_rate=0.1, seed=20)
    failed += _run(af, lake, logs, SCHEMA_DATASET,
                   f"{charges.messages} charge webhooks judged by the provider's JSON Schema",
                   "contracts/payment_events.schema.json", _keyword_example)
    scans = generate_shipments(lake.inbox(ODCS_DATASET, DATE), messages=ODCS_MESSAGES, batch_date=DATE,
                               poison_rate=0.12, seed=20)
    return failed + _run(af, lake, logs, ODCS_DATASET,
                         f"{scans.messages} parcel scans judged by an ODCS data contract",
                         "contracts/shipments.odcs.yaml", _key_example)


def _run(af: LocalAirflow, lake: Lake, logs: Path, dataset: str, what: str, contract: str,
         example: Any) -> int:
    dag_id = f"foodtaster_{dataset}"
    log = logs / f"{dag_id}-{DATE}.log"
    log.write_text("")
    print(f"\nNested messages: {what} in {relative_to_lake(lake.inbox(dataset, DATE), lake.root)}\n"
          f"airflow dags test {dag_id} {DATE}   ({contract}; log: {log})", flush=True)
    run = af.dags_test(dag_id, DATE, log=log)
    print(f"run {run['run_id']}: {run['state'].upper()}  "
          + " ".join(f"{task}={state}" for task, state in run["tasks"].items()))
    print("\n".join(nested_outcome(lake, dataset, example)))
    return int(run["state"] != "success")


def nested_outcome(lake: Lake, dataset: str = DATASET, example: Any = None) -> list[str]:
    """The batch's verdict, a quarantined message with element paths, the valid rows' columns."""
    from foodtaster.state import ledger
    from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables

    batch_id = batch_id_for(DATE)
    entries = [e for e in ledger.batch_entries(lake, dataset) if e["batch_id"] == batch_id]
    if not entries:
        return ["  no ledger entry: see the log"]
    entry = entries[-1]
    lines = [f"  batch {batch_id}: {entry['verdict'].upper()} - {entry['messages']} messages, "
             f"{entry['valid']} valid, {entry['quarantined']} quarantined, "
             f"{entry['duplicates_dropped']} duplicates dropped"]
    lines += _contract_gate(lake, dataset, batch_id)
    tables = DatasetTables(lake, dataset)
    if tables.batch(QUARANTINE, batch_id) is not None:
        found = (example or _element_example)(tables.read(QUARANTINE, batch_id).to_pylist())
        if found is not None:
            # as a person may read it: the values the contract marks personal masked
            shown = Masker.for_dataset(get_dataset(dataset), lake.root).message(found["_raw"])
            lines.append("  a quarantined message (personal values masked), its reasons naming the "
                         "failing places:")
            lines.append("    " + shown[:400] + " ...")
            lines += [f"    {r['column']}: {r['rule']} - {r['message']}" for r in found["reasons"]]
    if tables.batch(VALID, batch_id) is not None:
        schema = tables.table(VALID).schema()
        lines.append(f"  valid rows ({tables.identifier(VALID)}), nested columns as any Iceberg reader "
                     "sees them:")
        lines += [f"    {field.name}: {field.field_type}" for field in schema.fields
                  if field.name in ("data", "_unknown")]
    return lines


def _contract_gate(lake: Lake, dataset: str, batch_id: str) -> list[str]:
    """The batch gate's verdict where the contract adds expectations of its own (an ODCS
    document's dataset-level quality rules), each by its ODCS name."""
    from foodtaster.state.lake import exists, read_json

    added = get_dataset(dataset).read_contract().expectations
    summary = lake.summary(dataset, batch_id)
    if not added or not exists(summary):
        return []
    gate = read_json(summary).get("gate") or {}
    verdict = "skipped" if gate.get("skipped") else "passed" if gate.get("passed") else "FAILED"
    return [f"  batch gate: {verdict}, {len(gate.get('results') or [])} expectations, the contract's "
            "quality rules among them: " + ", ".join(f"{e.name} ({e.type})" for e in added)]


def _element_example(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The quarantined message with the most reasons inside array elements."""
    def inside(row: dict[str, Any]) -> int:
        return sum("[" in (r["column"] or "") for r in row["reasons"])

    best = max(rows, key=inside, default=None)
    return best if best is not None and inside(best) else None


def _keyword_example(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The quarantined message whose JSON Schema reasons go deepest: a keyword at a nested path."""
    def depth(row: dict[str, Any]) -> int:
        return max((r["column"] or "").count(".") + (r["column"] or "").count("[")
                   for r in row["reasons"]) if row["reasons"] else 0

    best = max(rows, key=depth, default=None)
    return best if best is not None and depth(best) else None


def _key_example(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A quarantined scan whose reason names the key of two properties: a conflicting copy."""
    return next((row for row in rows if any((r["column"] or "").startswith("(") for r in row["reasons"])),
                None)


def _local(uri: str) -> str:
    return uri.removeprefix("file://").removeprefix("file:")
