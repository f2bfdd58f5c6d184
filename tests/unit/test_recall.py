"""A recall on a small lake (pyarrow, no Spark): the published row moves to the quarantine with its
exact bytes, the ledger and summary count it, a second call changes nothing, and a CLI process
killed between its two commits loses nothing and is finished by running it again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.lake import reason, use_catalog_of, write_batch

from foodtaster.state import ledger
from foodtaster.state.browse import NotInLake, quarantined_rows, read_batch
from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, Lake, write_json
from foodtaster.state.poison import PoisonList, PoisonListError, fingerprint
from foodtaster.state.recall import RULE, recall, report_downstream
from foodtaster.state.tables import VALID, DatasetTables

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LINES = [b'{"message_id": "m1", "amount": 5}', b"{'bad'}", b'{"message_id": "m3", "amount": 7}',
         b'{"message_id": "m4", "amount": "\xc3\xa9"}']
BATCH = "20261120"


@pytest.fixture
def lake(tmp_path):
    write_batch(tmp_path, "2026-11-20", BATCH, LINES, {2: [reason("json.invalid", "not JSON", "parse")]})
    lake = Lake(str(tmp_path))
    counts = {"messages": 4, "valid": 3, "quarantined": 1, "duplicates_dropped": 0,
              "reasons": {"json.invalid": 1}}
    verdict = {"publish": True, "alert": True, "severity": "warning", "why": []}
    write_json(lake.summary("orders", BATCH), {
        "dataset": "orders", "batch_id": BATCH, "batch_date": "2026-11-20", "run_id": "r1",
        "quarantine_rate": 0.25, "verdict": verdict, **counts})
    return lake


def _lines(lake: Lake, zone: str) -> list[int]:
    rows = read_batch(lake, zone, "orders", BATCH, ["_line_number"])
    return sorted(rows.column("_line_number").to_pylist())


def _accounted(record: dict) -> bool:
    return record["messages"] == record["valid"] + record["quarantined"] + record["duplicates_dropped"]


def test_a_recall_moves_the_row_with_its_bytes_and_counts_it(lake):
    entry = report_downstream(lake, "orders", batch_id=BATCH, source_file="part-0.jsonl", line_number=4,
                              why="billing: amount not a number", reporter="billing", recall=True)
    assert (entry.source, entry.value) == ("downstream", fingerprint(LINES[3]))
    assert _lines(lake, "valid") == [1, 3] and _lines(lake, "quarantine") == [2, 4]
    row = quarantined_rows(lake, "orders", BATCH, rule=RULE)[0]
    assert row["_raw"] == LINES[3] and row["_line_number"] == 4  # exact bytes, read from raw/
    assert row["reasons"] == [reason(RULE, "billing: amount not a number", "registry", value=entry.id)]
    assert row["_source_file"] == entry.first_seen.source_file  # the lineage as it was published

    record = ledger.batch_entry(lake, "orders", BATCH)
    assert (record["valid"], record["quarantined"], record["recalled"]) == (2, 2, 1) and _accounted(record)
    assert record["quarantine_rate"] == 0.5
    assert [(r["entry"], r["line_number"], r["by"]) for r in record["recalls"]] == [(entry.id, 4, "billing")]
    summary = json.loads(Path(lake.summary("orders", BATCH)).read_text())
    assert (summary["valid"], summary["quarantined"], summary["reasons"][RULE]) == (2, 2, 1)

    again = recall(lake, "orders", entry, by="billing")  # nothing left to move: the same state
    assert again.moved == 0 and (again.valid, again.quarantined, again.recalled) == (2, 2, 1)
    assert _lines(lake, "quarantine") == [2, 4]
    assert len(ledger.batch_entry(lake, "orders", BATCH)["recalls"]) == 1
    valid = DatasetTables(lake, "orders").table(VALID)
    assert [s.summary.get("foodtaster.operation") for s in valid.snapshots()][-1] == "recall"  # one snapshot
    assert valid.current_snapshot().summary.get("deleted-records") == "3"
    assert valid.current_snapshot().summary.get("added-records") == "2"  # the file rewritten without it


def test_a_recall_needs_a_published_row(lake):
    poison = PoisonList(lake, "orders")
    with pytest.raises(PoisonListError, match="--batch, --file and --line"):
        recall(lake, "orders", poison.add("key", "m9", "no place", "operator"), by="x")
    quarantined = report_downstream(lake, "orders", batch_id=BATCH, source_file="part-0.jsonl",
                                    line_number=2, why="already quarantined", reporter="x")
    with pytest.raises(NotInLake, match="quarantine show --batch"):
        recall(lake, "orders", quarantined, by="x")
    assert ledger.batch_entry(lake, "orders", BATCH)["valid"] == 3  # nothing changed


def _cli(lake: Lake, *args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "foodtaster", "poison", "add", "--dataset", "orders", "--batch", BATCH,
         "--file", "part-0.jsonl", "--line", "3", "--why", "reporting: crashed", "--source", "downstream",
         "--recall", *args],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FOODTASTER_LAKE": lake.root, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_recall_killed_between_its_swaps_loses_nothing_and_is_finished_by_running_it_again(
        lake, tmp_path):
    faults = tmp_path / "faults"
    faults.mkdir()
    killed = _cli(lake, **{FAULT_AT_ENV: "recall_quarantined", FAULT_DIR_ENV: str(faults)})
    try:
        deadline = time.monotonic() + 60
        while not (faults / "recall_quarantined.reached").exists():
            assert killed.poll() is None, killed.communicate()
            assert time.monotonic() < deadline, "the recall never reached its fault point"
            time.sleep(0.05)
        # Between the commits a reader finds the row in both tables, never in neither.
        assert _lines(lake, "valid") == [1, 3, 4] and _lines(lake, "quarantine") == [2, 3]
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()
    assert ledger.batch_entry(lake, "orders", BATCH)["valid"] == 3  # counts not yet corrected

    done = _cli(lake)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert "recalled part-0.jsonl:3 of batch 20261120 (moved to the quarantine)" in out
    assert "4 messages = 2 valid + 2 quarantined + 0 duplicates dropped, 1 recalled" in out
    assert _lines(lake, "valid") == [1, 4] and _lines(lake, "quarantine") == [2, 3]  # once, not twice
    assert _accounted(ledger.batch_entry(lake, "orders", BATCH))
    assert len(PoisonList(lake, "orders").entries()) == 1


def test_the_cli_says_what_a_recall_needs(lake):
    done = subprocess.run(
        [sys.executable, "-m", "foodtaster", "poison", "add", "--dataset", "orders", "--message-id", "m1",
         "--why", "x", "--recall"],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FOODTASTER_LAKE": lake.root},
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--recall needs --batch, --file and --line" in done.stderr


def test_a_recall_on_an_object_store_through_fsspec(lake, monkeypatch):
    import fsspec

    # the lake's folders on an object store; its tables where a configured catalog says
    memory = fsspec.filesystem("memory")
    memory.put(f"{lake.root}/", "/recall-lake/", recursive=True)
    use_catalog_of(lake, monkeypatch)
    remote = Lake("memory://recall-lake")
    report_downstream(remote, "orders", batch_id=BATCH, source_file="part-0.jsonl", line_number=1,
                      why="crashed", reporter="billing", recall=True)
    assert _lines(remote, "valid") == [3, 4] and _lines(remote, "quarantine") == [1, 2]
    assert quarantined_rows(remote, "orders", BATCH, rule=RULE)[0]["_raw"] == LINES[0]
    assert _accounted(ledger.batch_entry(remote, "orders", BATCH))
