"""The retry task's check (foodtaster.state.retries), on a quarantine written with pyarrow:
a row makes the pass work when every rule of it is retryable and it is due, or when it is
held for a group no longer open; every other row is left in the lake, unread as Python."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from support.lake import LINEAGE, REASON, commit_rows, reason

from foodtaster.contract_references import RetryPolicy
from foodtaster.state.dispositions import Dispositions
from foodtaster.state.groups import RULE as HELD
from foodtaster.state.groups import GroupLog, Poison
from foodtaster.state.lake import Lake
from foodtaster.state.retries import retry_candidates, retry_work
from foodtaster.state.tables import QUARANTINE

BATCH, DAY, SOURCE = "20261120", "2026-11-20", "file:/inbox/orders-1.jsonl"
REF = "customer_id.references(customers.customer_id)"
POLICY = RetryPolicy(max_attempts=3, backoff_s=3600, backoff_factor=2)
LANDED = datetime(2026, 11, 20, 8, tzinfo=UTC)
# line: (order_id, reasons)
ROWS = {
    1: ("o-1", [reason("amount.ge", "amount below 0", column="amount")]),  # poisons o-1
    2: ("o-2", [reason(REF, "c-9 not published", column="customer_id"), reason("amount.ge", "below 0")]),
    3: ("o-3", [reason(REF, "c-7 not published", column="customer_id", value="c-7")]),
    4: ("o-1", [reason(HELD, "o-1 is held", layer="group", column="order_id", value="o-1")]),
    5: ("o-5", None),
    6: ("o-6", []),
}


def key(line: int) -> str:
    return f"{BATCH}|{SOURCE}|{line}"


@pytest.fixture
def lake(tmp_path) -> Lake:
    the_lake = Lake(str(tmp_path))
    lines = sorted(ROWS)
    schema = pa.schema([("reasons", pa.list_(REASON)), ("order_id", pa.string()), *LINEAGE])
    commit_rows(the_lake, "orders", QUARANTINE, DAY, BATCH, pa.table({
        "reasons": [ROWS[n][1] for n in lines], "order_id": [ROWS[n][0] for n in lines],
        "_batch_id": [BATCH] * len(lines), "_source_file": [SOURCE] * len(lines), "_line_number": lines,
        "_ingested_at": [LANDED] * len(lines)}, schema=schema))
    GroupLog(the_lake, "orders").poisoned(BATCH, [Poison(key(1), "o-1", None, "m-1", BATCH)])
    return the_lake


def test_only_rows_with_rules_the_pass_acts_on_are_read_into_python(lake):
    rows = retry_candidates(lake, "orders", ["_line_number", "reasons"], {REF}, HELD)
    assert [row["_line_number"] for row in rows] == [3, 4]
    assert [row["_line_number"] for row in retry_candidates(lake, "orders",
                                                           ["_line_number"], {REF}, None)] == [3]
    assert retry_candidates(lake, "orders", ["_line_number"], {"x.y"}, None) == []


def test_a_row_failing_only_retryable_rules_is_due_its_first_wait_after_landing(lake):
    due = LANDED + timedelta(seconds=POLICY.wait_s(0))
    assert retry_work(lake, "orders", {REF: POLICY}, ("order_id",), due - timedelta(seconds=1)) is None
    why = retry_work(lake, "orders", {REF: POLICY}, ("order_id",), due)
    assert why == f"a retryable row is due ({key(3)})"
    assert retry_work(lake, "orders", {}, (), due) is None


def test_the_recorded_next_attempt_decides_and_a_settled_row_is_never_due(lake):
    log = Dispositions(lake, "orders")
    later = LANDED + timedelta(days=1)
    log.record("retrying", [(BATCH, SOURCE, 3)], by="test", attempts=1, next_at=later.isoformat())
    assert retry_work(lake, "orders", {REF: POLICY}, ("order_id",), later - timedelta(seconds=1)) is None
    why = retry_work(lake, "orders", {REF: POLICY}, ("order_id",), later)
    assert why == f"a retryable row is due ({key(3)})"
    log.record("redriven", [(BATCH, SOURCE, 3)], by="test", where="valid/orders/x")
    assert retry_work(lake, "orders", {REF: POLICY}, ("order_id",), later + timedelta(days=30)) is None


def test_a_held_row_makes_work_once_its_group_is_released(lake):
    assert retry_work(lake, "orders", {}, ("order_id",), LANDED) is None
    GroupLog(lake, "orders").release_group("o-1", "fixed downstream", "test")
    why = retry_work(lake, "orders", {}, ("order_id",), LANDED)
    assert why == "a held message's group is no longer open (o-1)"
    assert retry_work(lake, "orders", {REF: POLICY}, (), LANDED) is None  # no groups: no held rows
