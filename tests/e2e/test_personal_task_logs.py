"""`airflow dags test` of order_events, whose contract marks the customer's email and address
personal: no customer's email or street of the batch appears in the task logs (the Spark job's
output with its summary, the alert written to the lake and logged), nor in the alert file,
while the quarantine keeps the exact bytes (docs/decisions/023)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.lake import row_count

from foodtaster.sources.raw_batch import batch_id_for
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE
from foodtaster_dev.localenv import LocalAirflow
from foodtaster_dev.sample_events import generate_events

pytestmark = pytest.mark.slow
DATASET, DATE = "order_events", "2026-11-20"


def _personal_values(inbox: Path) -> set[str]:
    """Every customer email and street the inbox's messages carry, where they are strings."""
    found = set()
    for path in inbox.rglob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            try:
                customer = json.loads(line)["data"]["customer"]
            except (ValueError, KeyError, TypeError, RecursionError):
                continue
            if not isinstance(customer, dict):
                continue
            address = customer.get("address") if isinstance(customer.get("address"), dict) else {}
            found |= {v for v in (customer.get("email"), address.get("street")) if isinstance(v, str)
                      and len(v) >= 6}
    return found


def test_no_customer_email_in_the_task_logs(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    inbox = Path(lake.inbox(DATASET, DATE))
    generate_events(inbox, messages=120, batch_date=DATE, poison_rate=0.2, seed=5, files=1)
    planted = _personal_values(inbox)
    assert len(planted) > 100
    airflow = LocalAirflow(home=tmp_path / "airflow", lake=lake.root)
    airflow.migrate()
    log = tmp_path / "dags-test.log"
    run = airflow.dags_test(f"foodtaster_{DATASET}", DATE, log=log)
    # what `airflow dags test` printed, and the task log files it wrote
    logs = [log, *(p for p in (tmp_path / "airflow" / "logs").rglob("*") if p.is_file())]
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    assert run["tasks"].get("validate") == "success", text[-3000:]
    assert re.search(r"validated: dataset=order_events .* quarantined=[1-9]", text)  # the job's line
    alerts = [p.read_text() for p in Path(lake.state("alerts", DATASET)).glob("*")
              if p.suffix in (".html", ".json")]
    for value in planted:
        assert value not in text, f"{value!r} in the task log"
        assert not any(value in page for page in alerts), f"{value!r} in an alert file"
    assert "‹personal: " in text  # the summary's samples, printed by the job, masked
    assert row_count(lake, DATASET, QUARANTINE, batch_id_for(DATE)) > 0
