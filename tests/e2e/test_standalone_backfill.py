"""`airflow standalone` in the background (api-server, scheduler, dag-processor,
triggerer): backfills through `POST /api/v2/backfills`, and the self-pause after
`disable_after` held batches, against that one running Airflow.

Two datasets in a test registry: `orders` (three clean-ish days, backfilled twice) and
`orders_poisoned` (disable_after 2, two poisoned days).
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest
from e2e_support import HOLDING, fill_inbox, metadata_database, parquet_rows, partitions

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state import ledger
from foodtaster.state.lake import Lake, exists
from foodtaster_airflow.localenv import (
    LocalAirflow,
    drop_postgres_database,
    free_port,
    stop_group,
    wait_for_http,
)
from foodtaster_airflow.rest import AirflowApi, AirflowApiError

pytestmark = pytest.mark.slow
DAYS = ("2026-11-02", "2026-11-03", "2026-11-04")
POISONED_DAYS = ("2026-11-02", "2026-11-03")
FEW_POISON = {"poison_rate": 0.01, "kinds": ["truncated_json", "unknown_enum"]}  # < alert_rate
REGISTRY = f"""
datasets:
  orders:
    schedule: "@daily"
    start_date: "2026-11-01"
    contract: contracts.orders:Orders
    expectation_suite: {PROJECT_ROOT / "expectations/orders.json"}
    alert_rate: 0.02
    hold_rate: 0.20
  orders_poisoned:
    schedule: "@daily"
    start_date: "2026-11-01"
    contract: contracts.orders:Orders
    expectation_suite: {PROJECT_ROOT / "expectations/orders.json"}
    alert_rate: 0.02
    hold_rate: 0.20
    disable_after: 2
"""
BACKFILL_TIMEOUT = 900


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("lake"))


@pytest.fixture(scope="module")
def standalone(tmp_path_factory, lake):
    """One `airflow standalone` for the module, stopped by process group whatever happens.

    Its metadata DB is PostgreSQL: Airflow refuses backfills on SQLite under concurrent
    access (the scheduler holds it)."""
    database = metadata_database("foodtaster_airflow_e2e_standalone")
    home = tmp_path_factory.mktemp("airflow")
    registry = home / "pipeline.yaml"
    registry.write_text(REGISTRY)
    af = LocalAirflow(home=home, lake=lake, registry=registry, api_port=free_port(),
                      db_url=database, password="e2e-secret",
                      extra_env={"AIRFLOW__CORE__PARALLELISM": "3"})
    counts = {day: fill_inbox(lake, day, seed=int(day[-2:]), **FEW_POISON).counts()
              for day in DAYS}
    for day in POISONED_DAYS:
        fill_inbox(lake, day, dataset="orders_poisoned", seed=50 + int(day[-2:]), **HOLDING)
    log = home / "standalone.log"
    process = None
    try:
        af.migrate()
        process = af.start_standalone(log)
        wait_for_http(f"{af.base_url}/api/v2/version", timeout=240, process=process, log=log)
        api = AirflowApi(af.base_url, "admin", "e2e-secret")
        for dag_id in ("foodtaster_orders", "foodtaster_orders_poisoned"):
            wait_until(lambda d=dag_id: _dag_ready(api, d), 240, f"{dag_id} parsed", log)
        yield af, api, log, counts
    finally:
        stop_group(process)
        drop_postgres_database(database.rsplit("/", 1)[1])


def _dag_ready(api: AirflowApi, dag_id: str) -> bool:
    try:
        return not api.dag(dag_id)["is_paused"]
    except AirflowApiError:
        return False


def wait_until(condition, timeout: float, what: str, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(3)
    tail = log.read_text(errors="replace")[-5000:] if log else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{tail}")


def run_backfill(api: AirflowApi, dag_id: str, days: tuple[str, ...], log: Path,
                 **options) -> list[dict]:
    """Create a backfill over `days` and wait until it completes; its runs, by date."""
    backfill = api.create_backfill(dag_id, days[0], days[-1], **options)
    wait_until(lambda: api.backfill(backfill["id"])["completed_at"], BACKFILL_TIMEOUT,
               f"backfill {backfill['id']} of {dag_id}", log)
    runs = [run for run in api.dag_runs(dag_id) if run["run_type"] == "backfill"]
    latest: dict[str, dict] = {}
    for run in sorted(runs, key=lambda r: r["start_date"] or ""):
        latest[run["logical_date"][:10]] = run
    return [latest[day] for day in days if day in latest]


def backfilled(lake: str, zone: str) -> list[str]:
    """The zone's partitions of the backfilled days (the scheduler also runs the latest
    interval on its own: an empty batch of today, not part of the backfill)."""
    return [p for p in partitions(lake, zone) if p.split("/")[0][len("batch_date="):] in DAYS]


def rows(lake: str, zone: str) -> dict[str, int]:
    return {part: parquet_rows(Path(lake) / zone / "orders" / part)
            for part in backfilled(lake, zone)}


def test_backfill_of_three_days_then_the_same_backfill_again_adds_no_row(standalone, lake):
    _af, api, log, counts = standalone
    runs = run_backfill(api, "foodtaster_orders", DAYS, log, max_active_runs=2)
    assert [run["logical_date"][:10] for run in runs] == list(DAYS)
    assert [run["state"] for run in runs] == ["success"] * 3, runs
    for run in runs:
        states = {ti["task_id"]: ti["state"] for ti in
                  api.task_instances("foodtaster_orders", run["dag_run_id"])}
        assert states["publish"] == "success" and states["alert"] == "skipped", states

    expected_parts = [f"batch_date={d}/batch_id={d.replace('-', '')}" for d in DAYS]
    for zone in ("raw", "valid", "quarantine"):
        assert backfilled(lake, zone) == expected_parts, zone  # one partition a batch
    valid_before, quarantine_before = rows(lake, "valid"), rows(lake, "quarantine")
    assert list(valid_before.values()) == [counts[d]["valid"] for d in DAYS]
    assert list(quarantine_before.values()) == [counts[d]["quarantined"] for d in DAYS]

    # the same backfill again, reprocessing the completed runs: every task runs again
    again = run_backfill(api, "foodtaster_orders", DAYS, log, max_active_runs=2,
                         reprocess_behavior="completed")
    assert [run["state"] for run in again] == ["success"] * 3, again
    for first, second in zip(runs, again, strict=True):  # every run ran again, after the first
        assert datetime.fromisoformat(second["start_date"]) > datetime.fromisoformat(
            first["end_date"])
    for zone in ("raw", "valid", "quarantine"):
        assert backfilled(lake, zone) == expected_parts, zone
    assert rows(lake, "valid") == valid_before
    assert rows(lake, "quarantine") == quarantine_before
    entries = [e for e in ledger.batch_entries(Lake(lake), "orders") if e["batch_date"] in DAYS]
    assert [(e["batch_id"], e["verdict"]) for e in entries] == [
        (d.replace("-", ""), "published") for d in DAYS
    ]
    # each run's note, set by the run through the REST API, names its batch and verdict
    assert_notes(api, "foodtaster_orders", again, "published")


def assert_notes(api: AirflowApi, dag_id: str, runs: list[dict], verdict: str) -> None:
    """The notes as the API serves them to the UI: the verdict first, then the batch."""
    notes = {run["dag_run_id"]: run.get("note") for run in api.dag_runs(dag_id)}
    for run in runs:
        day = run["logical_date"][:10]
        note = notes[run["dag_run_id"]] or ""
        assert note.startswith(f"{verdict}: batch {day.replace('-', '')}, inbox date {day}"), (
            run["dag_run_id"], note)


def test_the_dag_pauses_itself_after_disable_after_held_batches(standalone, lake):
    _af, api, log, _counts = standalone
    dag_id = "foodtaster_orders_poisoned"
    runs = run_backfill(api, dag_id, POISONED_DAYS, log, max_active_runs=1)
    assert [run["state"] for run in runs] == ["success"] * 2, runs
    assert_notes(api, dag_id, runs, "HELD, not published")

    the_lake = Lake(lake)
    held = [e for e in ledger.batch_entries(the_lake, "orders_poisoned") if e["verdict"] != "empty"]
    assert [e["verdict"] for e in held] == ["held", "held"]
    assert ledger.held_streak(the_lake, "orders_poisoned") == 2
    for day in POISONED_DAYS:
        assert not exists(the_lake.valid("orders_poisoned", day, day.replace("-", "")))

    assert api.dag(dag_id)["is_paused"] is True
    assert ledger.is_disabled(the_lake, "orders_poisoned")
    alert = Path(lake) / "_state" / "alerts" / "orders_poisoned" / "20261103-disabled.html"
    assert alert.exists()
    text = alert.read_text()
    assert "paused" in text and dag_id in text
    # the healthy dataset is untouched
    assert api.dag("foodtaster_orders")["is_paused"] is False


def test_a_held_batch_is_released_from_the_redrive_dag_triggered_through_the_api(standalone, lake):
    """After the self-pause: the operator triggers `foodtaster_orders_poisoned_redrive` through
    `POST /api/v2/dags/{dag_id}/dagRuns`, as the UI's trigger form does, to release one held
    batch and redrive (dry run) its quarantine; the ledger records the release with its why."""
    _af, api, log, _counts = standalone
    dag_id, day, batch_id = "foodtaster_orders_poisoned_redrive", POISONED_DAYS[0], "20261102"
    wait_until(lambda: _dag_ready(api, dag_id), 240, f"{dag_id} parsed", log)
    why = "checked by hand: a test feed"
    conf = {"date_from": day, "dry_run": True, "release_batch": batch_id, "why": why}
    run = api.request("POST", f"dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})

    def finished():
        return next((r for r in api.dag_runs(dag_id) if r["dag_run_id"] == run["dag_run_id"]
                     and r["state"] in ("success", "failed")), None)

    done = wait_until(finished, 600, f"{dag_id} run", log)
    states = {ti["task_id"]: ti["state"] for ti in api.task_instances(dag_id, run["dag_run_id"])}
    assert done["state"] == "success", states
    assert (states["release"], states["redrive"], states["announce"]) == ("success", "success", "skipped")
    the_lake = Lake(lake)
    assert exists(the_lake.valid("orders_poisoned", day, batch_id))
    (entry,) = [e for e in ledger.batch_entries(the_lake, "orders_poisoned") if e["batch_id"] == batch_id]
    assert entry["verdict"] == "published" and entry["released"]["why"] == why
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]
