"""`make demo`'s nested dataset: order events in a CloudEvents envelope (`contracts/order_events.py`).

One generated day of `order_events` with every nested kind of poison goes through its DAG; the
demo prints the verdict, one quarantined message with the reasons naming the failing elements
(`data.lines[2].qty`), and the nested columns of the valid rows as a consumer reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foodtaster.sources.raw_batch import batch_id_for
from foodtaster.state.lake import Lake, exists
from foodtaster_dev.localenv import LocalAirflow

DATASET = "order_events"
DAG_ID = f"foodtaster_{DATASET}"
DATE = "2026-11-20"
MESSAGES = 400


def nested_demo(af: LocalAirflow, lake: Lake, logs: Path) -> int:
    """Run the nested dataset's DAG on a generated day and print what happened; 1 if the run failed."""
    from foodtaster_dev.sample_events import generate_events

    inbox = lake.inbox(DATASET, DATE)
    batch = generate_events(inbox, messages=MESSAGES, batch_date=DATE, poison_rate=0.1, seed=20)
    log = logs / f"{DAG_ID}-{DATE}.log"
    log.write_text("")
    print(f"\nNested messages: {batch.messages} order events in a CloudEvents envelope in {inbox}\n"
          f"airflow dags test {DAG_ID} {DATE}   (contracts/order_events.py; log: {log})", flush=True)
    run = af.dags_test(DAG_ID, DATE, log=log)
    print(f"run {run['run_id']}: {run['state'].upper()}  "
          + " ".join(f"{task}={state}" for task, state in run["tasks"].items()))
    print("\n".join(nested_outcome(lake)))
    return int(run["state"] != "success")


def nested_outcome(lake: Lake) -> list[str]:
    """The batch's verdict, a quarantined message with element paths, the valid rows' columns."""
    import pyarrow.parquet as pq

    from foodtaster.state import ledger

    batch_id = batch_id_for(DATE)
    entries = [e for e in ledger.batch_entries(lake, DATASET) if e["batch_id"] == batch_id]
    if not entries:
        return ["  no ledger entry: see the log"]
    entry = entries[-1]
    lines = [f"  batch {batch_id}: {entry['verdict'].upper()} - {entry['messages']} messages, "
             f"{entry['valid']} valid, {entry['quarantined']} quarantined, "
             f"{entry['duplicates_dropped']} duplicates dropped"]
    quarantine = lake.quarantine(DATASET, DATE, batch_id)
    if exists(quarantine):
        example = _element_example(pq.read_table(_local(quarantine)).to_pylist())
        if example is not None:
            lines.append("  a quarantined message, its reasons naming the failing elements:")
            lines.append("    " + example["_raw"].decode("utf-8", "replace")[:160] + " ...")
            lines += [f"    {r['column']}: {r['rule']} - {r['message']}" for r in example["reasons"]]
    valid = lake.valid(DATASET, DATE, batch_id)
    if exists(valid):
        schema = pq.read_schema(next(Path(_local(valid)).rglob("*.parquet")))
        lines.append(f"  valid rows ({valid}), nested columns as any Parquet reader sees them:")
        lines += [f"    {field.name}: {field.type}" for field in schema if field.name in ("data", "_unknown")]
    return lines


def _element_example(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The quarantined message with the most reasons inside array elements."""
    def inside(row: dict[str, Any]) -> int:
        return sum("[" in (r["column"] or "") for r in row["reasons"])

    best = max(rows, key=inside, default=None)
    return best if best is not None and inside(best) else None


def _local(uri: str) -> str:
    return uri.removeprefix("file://").removeprefix("file:")
