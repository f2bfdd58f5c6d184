"""What the DAG's tasks hand each other, as a unit test fakes them: the batch summary the job
writes, the land task's XCom, and the ledger task's entry built from its upstream XComs."""

from __future__ import annotations

from dataclasses import asdict, replace

from foodtaster.landing import LandingResult
from foodtaster.policy import Facts, decide
from foodtaster.registry import Tables, get_dataset
from foodtaster.state import ledger
from foodtaster.state.lake import Lake
from foodtaster.summary import Decision


def summary(**overrides):
    base = {
        "dataset": "orders", "batch_id": "20261120", "batch_date": "2026-11-20",
        "messages": 100, "valid": 90, "quarantined": 9, "duplicates_dropped": 1,
        "quarantine_rate": 0.09, "reasons": {"a.rule": 2, "b.rule": 7, "c.rule": 2},
        "samples": [], "gate": {"passed": True, "failed": []}, "paths": {"report": "r"},
        "tables": {"names": asdict(Tables.named_after("orders")), "branch": "audit-20261120"},
        "timings": {"total_s": 1.0}, "run_id": "run",
    }
    document = {**base, **overrides}
    # as the job writes it: with the verdict decided from the same counts
    facts = replace(Facts.of_summary(document), accounted=document["valid"] + document["quarantined"]
                    + document["duplicates_dropped"])
    return {**document, "verdict": decide(facts, get_dataset("orders")).as_dict()}


def landed(lake: Lake) -> dict:
    return {"lake": lake.root, "dataset": "orders", "batch_id": "20261120",
            "batch_date": "2026-11-20", "messages": 100, "files": [{}], "unreadable": [],
            "empty": False}


def ledger_entry(lake: Lake, decision: dict | None, published: dict | None, dag_id: str,
                 run_id: str) -> ledger.LedgerEntry:
    """The ledger task's entry of `landed(lake)`, from the XComs its upstream tasks hand it."""
    return ledger.ledger_entry(LandingResult.from_dict(landed(lake)),
                               Decision.from_json(decision) if decision else None, bool(published),
                               None, dag_id, run_id)
