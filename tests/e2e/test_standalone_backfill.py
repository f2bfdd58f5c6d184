"""`airflow standalone` in the background (api-server, scheduler, dag-processor,
triggerer): backfills through `POST /api/v2/backfills`, and the self-pause after
`disable_after` held batches, against that one running Airflow.

Datasets in a test registry: `orders` (two clean-ish days, backfilled twice),
`orders_poisoned` (disable_after 2, two poisoned days), and for the second chances
`customers` and `orders_chances` (orders as conversations whose customers may land late,
from `sample.generate_second_chances`; runs triggered one by one through the API).
The orders and orders_poisoned scenarios run side by side, then the second chances'
(`scenarios`): a test waits for its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from datetime import datetime
from functools import partial
from pathlib import Path

import pytest
from support.chains import run_chain
from support.e2e import HOLDING, fill_inbox, metadata_database, partitions
from support.environment import TESTS_DIR
from support.lake import row_count

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state import ledger
from foodtaster.state.accounts import check_accounts
from foodtaster.state.dispositions import Dispositions
from foodtaster.state.groups import GroupLog
from foodtaster.state.lake import Lake, read_json
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables
from foodtaster_airflow.rest import AirflowApi, AirflowApiError
from foodtaster_dev import sample
from foodtaster_dev.localenv import (
    LocalAirflow,
    drop_postgres_database,
    free_port,
    stop_group,
    wait_for_http,
)

pytestmark = pytest.mark.slow
DAYS = ("2026-11-02", "2026-11-03")  # a range, run side by side (max_active_runs=2)
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
  customers:
    schedule: null
    contract: contracts.customers:Customers
    expectation_suite: {PROJECT_ROOT / "expectations/customers.json"}
    alert_rate: 0.5
    hold_rate: 0.5
  orders_chances:
    schedule: null
    contract: support.contracts:OrdersNoWait
    expectation_suite: {PROJECT_ROOT / "expectations/orders.json"}
    alert_rate: 0.5
    hold_rate: 0.5
    group_by: order_id
    order_by: created_at
"""
CHANCES, CHANCE_DAYS, AFTER = "orders_chances", ("2026-11-05", "2026-11-06"), "2026-11-07"
BACKFILL_TIMEOUT = 900
# Runs of two scenarios are in flight together (see `scenarios`): four task slots, so a light task
# (land, gate, ledger) need not wait for one of three Spark jobs to end; the task supervisor
# notices its task's exit within a second, not at its 5 s heartbeat.
IN_FLIGHT_KNOBS = {"AIRFLOW__CORE__PARALLELISM": "4", "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1"}
POLL = 1.0  # seconds between two looks at a run or a backfill
ENDING = threading.Event()  # set when the module ends: a scenario still waiting gives up


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("lake"))


@pytest.fixture(scope="module")
def standalone(tmp_path_factory, lake, airflow_postgres_template):
    """One `airflow standalone` for the module, stopped by process group whatever happens.

    Its metadata DB is PostgreSQL, a copy of the session's migrated one: Airflow refuses
    backfills on SQLite under concurrent access (the scheduler holds it)."""
    database = metadata_database("foodtaster_airflow_e2e_standalone", airflow_postgres_template)
    home = tmp_path_factory.mktemp("airflow")
    registry = home / "pipeline.yaml"
    registry.write_text(REGISTRY)
    # tests/ in PYTHONPATH: support.contracts, for the scheduler's tasks and Spark
    af = LocalAirflow(home=home, lake=lake, registry=registry, api_port=free_port(),
                      db_url=database, password="e2e-secret",
                      extra_env={**IN_FLIGHT_KNOBS, "PYTHONPATH": os.pathsep.join(
                          filter(None, (str(TESTS_DIR), str(PROJECT_ROOT), os.environ.get("PYTHONPATH"))))})
    counts = {day: fill_inbox(lake, day, seed=int(day[-2:]), **FEW_POISON).counts()
              for day in DAYS}
    for day in POISONED_DAYS:
        fill_inbox(lake, day, dataset="orders_poisoned", seed=50 + int(day[-2:]), **HOLDING)
    log = home / "standalone.log"
    process = None
    try:
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
        if ENDING.is_set():
            raise AssertionError(f"the module ended while waiting for {what}")
        value = condition()
        if value:
            return value
        time.sleep(POLL)
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
    batches = {f"batch_date={b.batch_date}/batch_id={b.batch_id}": b.rows
               for b in DatasetTables(Lake(lake), "orders").batches(zone)}
    return {part: batches[part] for part in backfilled(lake, zone)}


def backfill_of_two_days_then_the_same_backfill_again_adds_no_row(standalone, lake):
    _af, api, log, counts = standalone
    runs = run_backfill(api, "foodtaster_orders", DAYS, log, max_active_runs=2)
    assert [run["logical_date"][:10] for run in runs] == list(DAYS)
    assert [run["state"] for run in runs] == ["success"] * len(DAYS), runs
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
    assert [run["state"] for run in again] == ["success"] * len(DAYS), again
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


def the_dag_pauses_itself_after_disable_after_held_batches(standalone, lake):
    _af, api, log, _counts = standalone
    dag_id = "foodtaster_orders_poisoned"
    runs = run_backfill(api, dag_id, POISONED_DAYS, log, max_active_runs=1)
    assert [run["state"] for run in runs] == ["failed"] * 2, runs  # held: red (docs/decisions/017)
    assert_notes(api, dag_id, runs, "HELD, not published")

    the_lake = Lake(lake)
    held = [e for e in ledger.batch_entries(the_lake, "orders_poisoned") if e["verdict"] != "empty"]
    assert [e["verdict"] for e in held] == ["held", "held"]
    assert ledger.held_streak(the_lake, "orders_poisoned") == 2
    for day in POISONED_DAYS:
        assert row_count(the_lake, "orders_poisoned", VALID, day.replace("-", "")) == 0

    assert api.dag(dag_id)["is_paused"] is True
    assert ledger.is_disabled(the_lake, "orders_poisoned")
    alert = Path(lake) / "_state" / "alerts" / "orders_poisoned" / "20261103-disabled.html"
    assert alert.exists()
    text = alert.read_text()
    assert "paused" in text and dag_id in text
    # the healthy dataset is untouched
    assert api.dag("foodtaster_orders")["is_paused"] is False


def a_held_batch_is_released_from_the_redrive_dag_triggered_through_the_api(standalone, lake):
    """After the self-pause: the operator triggers `foodtaster_orders_poisoned_redrive` through
    `POST /api/v2/dags/{dag_id}/dagRuns`, as the UI's trigger form does, to release one held
    batch and redrive (dry run) its quarantine; the ledger records the release with its why."""
    _af, api, log, _counts = standalone
    dag_id, day, batch_id = "foodtaster_orders_poisoned_redrive", POISONED_DAYS[0], "20261102"
    why = "checked by hand: a test feed"
    conf = {"date_from": day, "dry_run": True, "release_batch": batch_id, "why": why}
    _run_id, states = trigger(api, dag_id, conf, log)
    assert (states["release"], states["redrive"], states["announce"]) == ("success", "success", "skipped")
    the_lake = Lake(lake)
    assert (row_count(the_lake, "orders_poisoned", VALID, batch_id) > 0)
    (entry,) = [e for e in ledger.batch_entries(the_lake, "orders_poisoned") if e["batch_id"] == batch_id]
    assert entry["verdict"] == "published" and entry["released"]["why"] == why
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]


def trigger(api: AirflowApi, dag_id: str, conf: dict, log: Path) -> tuple[str, dict[str, str]]:
    """`POST /api/v2/dags/{dag_id}/dagRuns` with `conf`, as the UI's trigger form does; waits for
    the run to succeed. Its run id and its tasks' states."""
    wait_until(lambda: _dag_ready(api, dag_id), 240, f"{dag_id} parsed", log)
    run_id = api.request("POST", f"dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})[
        "dag_run_id"]

    def finished():
        run = api.request("GET", f"dags/{dag_id}/dagRuns/{run_id}")
        return run if run["state"] in ("success", "failed") else None

    done = wait_until(finished, 600, f"{dag_id} run {run_id}", log)
    states = {ti["task_id"]: ti["state"] for ti in api.task_instances(dag_id, run_id)}
    assert done["state"] == "success", (run_id, states)
    return run_id, states


@pytest.fixture(scope="module")
def chances(standalone, lake, tmp_path_factory):
    """Two days of orders and customers in the inboxes of `orders_chances` and `customers`; the
    generator's answer key. Some customers land a day after their order, some never; some
    conversations start with a poison message (an unknown currency)."""
    generated = tmp_path_factory.mktemp("generated")
    truth = sample.generate_second_chances(generated, CHANCE_DAYS, orders_per_day=10, late_share=0.3,
                                           poisoned_share=0.2, seed=6)
    for source, dataset in (("orders", CHANCES), ("customers", "customers")):
        for day in CHANCE_DAYS:
            if (generated / source / f"dt={day}").exists():
                shutil.copytree(generated / source / f"dt={day}", Lake(lake).inbox(dataset, day))
    return truth


def _valid_rows(lake: str, dataset: str) -> list[dict]:
    """Every row main of the valid table holds, batch by batch, each batch's in file order."""
    columns = ["message_id", "order_id"] if dataset == CHANCES else ["message_id"]
    rows = DatasetTables(Lake(lake), dataset).read(
        VALID, columns=[*columns, "batch_date", "batch_id"]).to_pylist()
    return sorted(rows, key=lambda row: row["batch_id"])


def _holds(lake: str, *datasets: str) -> None:
    """Nothing lost, nothing twice: every batch adds up, no message is published twice."""
    for dataset in datasets:
        check_accounts(Lake(lake), dataset)
        ids = [row["message_id"] for row in _valid_rows(lake, dataset)]
        assert len(ids) == len(set(ids)), dataset


def orders_whose_customer_lands_a_day_late_are_published_by_the_next_runs_retry(
        standalone, lake, chances):
    """Day 1: customers, then orders: orders of a customer not landed yet are `retrying`
    (their retry task counts an attempt). Day 2: the late customers are published, then the
    orders run's retry task publishes the waiting orders (and what their groups held)."""
    _af, api, log, _counts = standalone
    the_lake, (day1, day2) = Lake(lake), CHANCE_DAYS
    for dataset in ("customers", CHANCES):
        _run, states = trigger(api, f"foodtaster_{dataset}", {"batch_date": day1}, log)
        assert (states["publish"], states["retry"]) == ("success", "success"), states
    summary = read_json(the_lake.summary(CHANCES, day1.replace("-", "")))
    expected = chances.expected(day1)
    assert (summary["valid"], summary["retrying"], summary["held_for_group"]) == (
        expected["valid"], expected["retrying"], expected["held"])
    state = Dispositions(the_lake, CHANCES).state()
    retrying = [status for _row, status in state if status.status == "retrying"]
    assert len(retrying) == expected["retrying"] and {s.attempts for s in retrying} == {1}
    _holds(lake, "customers", CHANCES)

    for dataset in ("customers", CHANCES):
        trigger(api, f"foodtaster_{dataset}", {"batch_date": day2}, log)
    published = {row["message_id"] for row in _valid_rows(lake, CHANCES)}
    poisoned = {o.order_id for o in chances.orders if o.expected == "quarantined"}
    late = {o.message_id for o in chances.orders if o.day == day1 and o.customer_day == day2}
    late_groups = {o.order_id for o in chances.orders if o.message_id in late}
    assert late and late <= published  # retried, published under their own day
    following = {o.message_id for o in chances.orders if o.order_id in late_groups - poisoned}
    assert following <= published  # and what their groups held behind them
    never = [o for o in chances.orders if o.customer_day is None]
    state = Dispositions(the_lake, CHANCES).state()
    statuses = {status.status for row, status in state if row.batch_id == day1.replace("-", "")
                and status.status != "redriven"}
    assert statuses <= {"retrying"} and never  # the never-landing ones wait on, two attempts made
    assert max(s.attempts for _row, s in state if s.status == "retrying") == 2
    _holds(lake, "customers", CHANCES)


def a_poisoned_conversation_is_released_by_a_purge_and_a_redrive_after_a_fix(
        standalone, lake, chances):
    """A poison message holds the later messages of its order. One poison message is purged
    through the CLI; the contract is fixed and the others redriven from the redrive DAG's form
    (a dry run first: nothing moves); the next run publishes the held messages, in order."""
    af, api, log, _counts = standalone
    the_lake = Lake(lake)
    poison = [o for o in chances.orders if o.expected == "quarantined"]
    held = {o.message_id: o for o in chances.orders if o.expected == "held"
            and o.order_id in {p.order_id for p in poison}}
    assert len(poison) >= 2 and held
    assert {p.order_id for p in poison} <= set(GroupLog(the_lake, CHANCES).open_groups())
    assert not set(held) & {row["message_id"] for row in _valid_rows(lake, CHANCES)}
    quarantined = {row["message_id"]: [reason["rule"] for reason in row["reasons"]] for row in DatasetTables(
        the_lake, CHANCES).read(QUARANTINE, columns=["message_id", "reasons"]).to_pylist()}
    assert all(quarantined[m] == ["group.poisoned"] for m in held)  # foodtaster.engine.split.group_hold.RULE

    purged = poison[0]
    batch = purged.day.replace("-", "")
    (row,) = [r for r in DatasetTables(the_lake, CHANCES).read(QUARANTINE, batch).to_pylist()
              if r["message_id"] == purged.message_id]
    assert [reason["rule"] for reason in row["reasons"]] == ["currency.isin"]
    done = subprocess.run(
        [sys.executable, "-m", "foodtaster", "purge", "--dataset", CHANCES, "--batch", batch,
         "--file", row["_source_file"], "--line", str(row["_line_number"]), "--why", "a test order"],
        env={**af.env(), "PYTHONPATH": str(PROJECT_ROOT)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and f"purged 1 quarantined rows of {CHANCES}" in done.stdout, done.stderr

    # in one move: the other scenarios' tasks and jobs read the registry meanwhile
    fixed = af.registry.with_suffix(".fixed")
    fixed.write_text(af.registry.read_text().replace(
        "support.contracts:OrdersNoWait\n", "support.contracts:OrdersNoWaitFixed\n"))
    os.replace(fixed, af.registry)
    form = {"date_from": CHANCE_DAYS[0], "date_to": CHANCE_DAYS[-1], "rule": "currency.isin",
            "why": "the currency XXX is accepted"}
    before = partitions(lake, "valid", CHANCES)
    dry_id, states = trigger(api, f"foodtaster_{CHANCES}_redrive", {**form, "dry_run": True}, log)
    assert (states["redrive"], states["announce"]) == ("success", "skipped"), states
    assert partitions(lake, "valid", CHANCES) == before  # a dry run moves nothing
    report = _redrive_report(lake, dry_id)
    assert report["dry_run"] and report["counts"]["published"] == len(poison) - 1
    assert report["by_rule"]["currency.isin"]["published"] == len(poison) - 1

    run_id, states = trigger(api, f"foodtaster_{CHANCES}_redrive", {**form, "dry_run": False}, log)
    assert states["announce"] == "success", states
    assert _redrive_report(lake, run_id)["counts"]["published"] == len(poison) - 1
    assert {p.order_id for p in poison} <= set(GroupLog(the_lake, CHANCES).open_groups())
    _holds(lake, "customers", CHANCES)

    # the next run (nothing landed that day) releases the groups; its retry task publishes
    _run, states = trigger(api, f"foodtaster_{CHANCES}", {"batch_date": AFTER}, log)
    assert (states["validate"], states["retry"]) == ("skipped", "success"), states
    assert not {p.order_id for p in poison} & set(GroupLog(the_lake, CHANCES).open_groups())
    # a batch of released groups holds rows of several days: its batch id names it
    new = {part.split("batch_id=", 1)[1] for part in set(partitions(lake, "valid", CHANCES)) - set(before)}
    out = [row for row in _valid_rows(lake, CHANCES)
           if row["batch_id"] in new and row["batch_id"].endswith("-g")]
    assert {row["message_id"] for row in out} == set(held)
    for order in {o.order_id for o in held.values()}:  # a conversation's messages in its order
        sent = [row["message_id"] for row in out if row["order_id"] == order]
        assert sent == sorted(sent, key=lambda m: int(m.rsplit("-", 1)[1])), sent
    assert purged.message_id not in {row["message_id"] for row in _valid_rows(lake, CHANCES)}
    _holds(lake, "customers", CHANCES)


def _redrive_report(lake: str, run_id: str) -> dict:
    """The report of the redrive a run of the redrive DAG made (its folder names the run), by the
    user who triggered it."""
    from foodtaster.state.lake import run_id_from

    report = read_json(str(Path(lake) / "reports" / CHANCES / f"redrive-{run_id_from(run_id)[:56]}"
                           / "redrive.json"))
    assert report["by"] == "admin", report["by"]  # the person, as Airflow records the run's trigger
    return report


@pytest.fixture(scope="module")
def scenarios(request, standalone, lake, chances) -> dict:
    """The scenarios in three chains, each in a thread of its own: the orders backfills; the
    self-pause then the release of a held batch; the second chances then the purge and redrive.
    A chain's scenarios run one after the other (the later one starts from what the earlier one
    left). The first two chains touch different datasets: their runs (a Spark job each) are in
    flight together instead of waiting for each other. The third starts when they are done:
    `orders` and `orders_poisoned` reference `customers`, a check that applies only once some
    customers are published, as the third chain does first. Only the chains of the selected
    tests run, up to the last selected scenario. A test waits for its scenario's outcome: what
    the scenario raised, the test raises; after a failure the rest of its chain is not run
    (`chains.run_chain`). By scenario function, its Future."""
    chains = (
        (partial(backfill_of_two_days_then_the_same_backfill_again_adds_no_row, standalone, lake),),
        (partial(the_dag_pauses_itself_after_disable_after_held_batches, standalone, lake),
         partial(a_held_batch_is_released_from_the_redrive_dag_triggered_through_the_api, standalone, lake)),
        (partial(orders_whose_customer_lands_a_day_late_are_published_by_the_next_runs_retry,
                 standalone, lake, chances),
         partial(a_poisoned_conversation_is_released_by_a_purge_and_a_redrive_after_a_fix,
                 standalone, lake, chances)),
    )
    wanted = {item.originalname.removeprefix("test_") for item in request.session.items}
    outcomes: dict = {}

    def run(chain, after=()):
        for thread in after:
            thread.join()
        run_chain([(scenario.func.__name__, scenario, outcomes[scenario.func]) for scenario in chain])

    ENDING.clear()
    threads = []
    for number, chain in enumerate(chains):
        last = max((i for i, s in enumerate(chain) if s.func.__name__ in wanted), default=-1)
        outcomes.update({scenario.func: Future() for scenario in chain[:last + 1]})
        after = tuple(threads) if number == 2 else ()  # the second chances after the orders
        threads.append(threading.Thread(target=run, args=(chain[:last + 1], after), daemon=True))
    for thread in threads:
        thread.start()
    try:
        yield outcomes
    finally:
        ENDING.set()
        for thread in threads:
            thread.join(timeout=150)


def test_backfill_of_two_days_then_the_same_backfill_again_adds_no_row(scenarios):
    scenarios[backfill_of_two_days_then_the_same_backfill_again_adds_no_row].result()


def test_the_dag_pauses_itself_after_disable_after_held_batches(scenarios):
    scenarios[the_dag_pauses_itself_after_disable_after_held_batches].result()


def test_a_held_batch_is_released_from_the_redrive_dag_triggered_through_the_api(scenarios):
    scenarios[a_held_batch_is_released_from_the_redrive_dag_triggered_through_the_api].result()


def test_orders_whose_customer_lands_a_day_late_are_published_by_the_next_runs_retry(scenarios):
    scenarios[orders_whose_customer_lands_a_day_late_are_published_by_the_next_runs_retry].result()


def test_a_poisoned_conversation_is_released_by_a_purge_and_a_redrive_after_a_fix(scenarios):
    scenarios[a_poisoned_conversation_is_released_by_a_purge_and_a_redrive_after_a_fix].result()
