"""`foodtaster groups ls|release`: the open conversations of a dataset, seen and released by hand,
run as a real process on a lake written here with pyarrow (no Spark, no JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from support.lake import LINEAGE, REASON, commit_rows, reason

from foodtaster.state.dispositions import Dispositions
from foodtaster.state.groups import RULE, GroupLog, Poison, held_counts
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BATCH, DAY = "20261120", "2026-11-20"
SOURCE = "file:/inbox/orders-1.jsonl"
# line: (message_id, order_id, reasons): m-1 poisons o-1 (m-2, m-3 held), m-4 poisons o-2 (m-5 held)
ROWS = {
    1: ("m-1", "o-1", [reason("currency.isin", "XXX is not a currency", column="currency")]),
    2: ("m-2", "o-1", [reason(RULE, "order_id o-1 is held: its message m-1 of batch 20261120 was quarantined",
                              layer="group", column="order_id", value="o-1")]),
    3: ("m-3", "o-1", [reason(RULE, "order_id o-1 is held", layer="group", column="order_id", value="o-1")]),
    4: ("m-4", "o-2", [reason("amount.ge", "amount below 0", column="amount")]),
    5: ("m-5", "o-2", [reason(RULE, "order_id o-2 is held", layer="group", column="order_id", value="o-2")]),
}


def run(lake, *args, expect=0):
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FOODTASTER_LAKE": str(lake)}
    done = subprocess.run([sys.executable, "-m", "foodtaster", "groups", *args], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == expect, done.stderr
    return done


@pytest.fixture
def lake(tmp_path):
    the_lake = Lake(str(tmp_path))
    lines = sorted(ROWS)
    schema = pa.schema([("_raw", pa.binary()), ("reasons", pa.list_(REASON)), ("message_id", pa.string()),
                        ("order_id", pa.string()), *LINEAGE])
    commit_rows(the_lake, "orders", QUARANTINE, DAY, BATCH, pa.table({
        "_raw": [b"{}"] * len(lines), "reasons": [ROWS[n][2] for n in lines],
        "message_id": [ROWS[n][0] for n in lines], "order_id": [ROWS[n][1] for n in lines],
        "_batch_id": [BATCH] * len(lines), "_source_file": [SOURCE] * len(lines), "_line_number": lines,
        "_ingested_at": [None] * len(lines)}, schema=schema))
    GroupLog(the_lake, "orders").poisoned(BATCH, [
        Poison(f"{BATCH}|{SOURCE}|{n}", ROWS[n][1], f"{DAY}T09:00:00.000000Z", ROWS[n][0], BATCH)
        for n in (1, 4)])
    return tmp_path


def test_ls_shows_each_open_group_with_its_poison_and_how_many_it_holds(lake):
    out = run(lake, "ls", "--dataset", "orders").stdout.splitlines()
    assert out[0].split() == ["order_id", "poison", "message", "batch", "since", "held"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["o-1"][1:3] == ["m-1", BATCH] and rows["o-1"][-1] == "2"
    assert rows["o-2"][1:3] == ["m-4", BATCH] and rows["o-2"][-1] == "1"
    assert rows["o-1"][3].startswith("20")  # since: when the run recorded the poison
    # a held message published later (a release already redriven it) is no longer counted
    Dispositions(Lake(str(lake)), "orders").record("redriven", [(BATCH, SOURCE, 3)], by="test", where="x")
    out = run(lake, "ls", "--dataset", "orders", "--json").stdout
    listed = [json.loads(line) for line in out.splitlines()]
    (entry,) = [e for e in listed if e["group"] == "o-1"]
    assert entry["held"] == 1 and [p["message_id"] for p in entry["poison"]] == ["m-1"]


def test_release_frees_one_group_and_records_who_and_why(lake):
    done = run(lake, "release", "--dataset", "orders", "--group", "o-1", "--why", "CREATED fixed downstream",
               "--by", "alice")
    assert "released order_id o-1 of orders (1 poison messages)" in done.stdout
    assert "publishes its 2 held messages in order" in done.stdout
    log = GroupLog(Lake(str(lake)), "orders")
    assert list(log.open_groups()) == ["o-2"]
    (event,) = [e for e in log.log.events() if e["type"] == "released"]
    assert (event["by"], event["why"]) == ("alice", "CREATED fixed downstream")
    out = run(lake, "ls", "--dataset", "orders").stdout.splitlines()
    assert [line.split()[0] for line in out[1:]] == ["o-2"]
    # again: nothing to release, and it says where to look
    again = run(lake, "release", "--dataset", "orders", "--group", "o-1", "--why", "x", expect=1)
    assert "is not held: see `foodtaster groups ls`" in again.stderr


@pytest.mark.parametrize(("args", "code", "says"), [
    (["ls", "--dataset", "customers"], 2, "customers has no conversations"),
    (["release", "--dataset", "orders", "--group", "o-2"], 2, "--why"),
    (["release", "--dataset", "orders", "--group", "o-2", "--why", " "], 2, "say why"),
])
def test_errors_say_what_to_do(lake, args, code, says):
    done = run(lake, *args, expect=code)
    assert says in done.stderr


def test_no_open_group_says_so_and_no_spark_is_started(tmp_path):
    assert "no open group of orders" in run(tmp_path, "ls", "--dataset", "orders").stdout
    probe = ("import sys; from foodtaster.ops.cli import main; "
             "main(['groups', 'ls', '--dataset', 'orders']); "
             "print(sorted(m for m in ('pyspark', 'airflow', 'great_expectations') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FOODTASTER_LAKE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.splitlines()[-1] == "[]", done.stderr


def test_held_messages_are_counted_across_batches_leaving_out_settled_ones_and_those_without_a_group(lake):
    the_lake = Lake(str(lake))
    held = [reason(RULE, "held", layer="group", column="order_id")]
    # lines 1-2 held for o-1, 3 held with no order_id, 4 held for o-2, 5 a poison of its own
    groups = ["o-1", "o-1", None, "o-2", "o-3"]
    commit_rows(the_lake, "orders", QUARANTINE, "2026-11-21", "20261121", pa.table({
        "reasons": [held, held, held, held, [reason("amount.ge", "amount below 0")]], "order_id": groups,
        "_batch_id": ["20261121"] * 5, "_source_file": [SOURCE] * 5, "_line_number": [1, 2, 3, 4, 5]},
        schema=pa.schema([("reasons", pa.list_(REASON)), ("order_id", pa.string()), *LINEAGE[:3]])))
    log = Dispositions(the_lake, "orders")
    log.record("duplicate", [("20261121", SOURCE, 2)], by="test")
    log.record("retrying", [(BATCH, SOURCE, 5), ("20261121", SOURCE, 4)], by="test", attempts=1)
    # and the first batch's m-2, m-3 (o-1) and m-5 (o-2); retrying is not settled
    assert held_counts(the_lake, "orders", ("order_id",)) == {"o-1": 3, "o-2": 2}
    log.record("purged", [(BATCH, SOURCE, 2), (BATCH, SOURCE, 5)], by="test", why="gone")
    assert held_counts(the_lake, "orders", ("order_id",)) == {"o-1": 2, "o-2": 1}
