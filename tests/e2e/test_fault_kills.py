"""Real job processes of one batch: a second run while the first holds the batch is refused, a
kill -9 of the whole process group at each of the job's commits leaves main of both tables as it
was (the earlier run's batch, whole), the next run takes over and publishes the same rows, and
the killed runs' files, which no snapshot references, are found and removed by `foodtaster
tables maintain`, never a referenced one. The moment of a kill is the job's own `fault_point`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, Lake
from foodtaster.state.lease import lease_uri
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables, audit_branch, batch_tag
from foodtaster_dev import sample

ROOT = Path(__file__).resolve().parents[2]
DATE = "2026-11-20"


def _job(lake: Lake, raw_path: str, run_id: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "spark_jobs/validate_batch.py"), "--master", "local[1]",
         "--dataset", "orders", "--input", raw_path, "--batch-id", "20261120", "--batch-date", DATE,
         "--lake", lake.root, "--run-id", run_id, "--no-gate"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: the kill takes the JVM with it
    )


def _rows(lake: Lake, zone: str) -> list[tuple]:
    """What a reader of main sees of the table, row by row (pyiceberg, as any reader)."""
    table = DatasetTables(lake, "orders").read(zone)
    return sorted(tuple(map(str, row.values())) for row in table.to_pylist())


def _killed_at(lake: Lake, raw_path: str, run_id: str, step: str, faults: Path,
               while_held=None) -> None:
    """Run the job until it reaches `step`, do `while_held` there, then kill -9 its process group."""
    killed = _job(lake, raw_path, run_id, **{FAULT_AT_ENV: step, FAULT_DIR_ENV: str(faults)})
    try:
        deadline = time.monotonic() + 300
        while not (faults / f"{step}.reached").exists():
            assert killed.poll() is None, killed.communicate()[1][-3000:]
            assert time.monotonic() < deadline, f"the job never reached {step}"
            time.sleep(0.1)
        if while_held is not None:
            while_held()
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()


def test_a_kill_at_each_commit_leaves_main_whole_and_the_next_run_takes_over(spark, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    sample.generate_batch(Path(lake.inbox("orders", DATE)), messages=200, seed=4, poison_rate=0.1,
                          files=2, gzip_files=1, kinds=["redelivery", "nan", "bad_timestamp"])
    landed = land_batch(lake, "orders", DATE)
    first = run_batch(spark, BatchRun(config=get_dataset("orders"), input_path=landed.raw_path,
                                      lake=lake, batch_id=landed.batch_id, batch_date=DATE,
                                      gate=False, run_id="first")).to_json()
    tables = DatasetTables(lake, "orders")
    summary_path = Path(lake.summary("orders", landed.batch_id))
    valid, quarantined = _rows(lake, VALID), _rows(lake, QUARANTINE)
    mains = {zone: tables.table(zone).current_snapshot().snapshot_id for zone in (VALID, QUARANTINE)}
    assert first["published"] and len(valid) == first["valid"] and len(quarantined) == first["quarantined"]

    def second_run_refused() -> None:
        refused = _job(lake, landed.raw_path, "second")
        _out, err = refused.communicate(timeout=300)
        assert refused.returncode != 0 and "is held by run killed-written" in err, err[-3000:]

    faults = tmp_path / "faults"
    faults.mkdir()
    # Killed after Spark wrote its files, before any commit; then after its valid rows went to their
    # audit branch and its quarantine to main.
    _killed_at(lake, landed.raw_path, "killed-written", "written", faults, second_run_refused)
    assert {zone: tables.table(zone).current_snapshot().snapshot_id for zone in (VALID, QUARANTINE)} == mains
    _killed_at(lake, landed.raw_path, "killed-committed", "quarantine_committed", faults)
    assert tables.table(VALID).current_snapshot().snapshot_id == mains[VALID]  # main never moved
    assert _rows(lake, VALID) == valid and _rows(lake, QUARANTINE) == quarantined  # the same rows, whole
    staged = tables.table(VALID).snapshot_by_name(audit_branch(landed.batch_id))
    assert staged.summary.get("foodtaster.run-id") == "killed-committed"  # a reader of main never sees it
    assert json.loads(summary_path.read_text())["run_id"] == "first"
    holder = json.loads(Path(lease_uri(lake, "orders", landed.batch_id)).read_text())
    assert holder["run_id"] == "killed-committed"

    rerun = _job(lake, landed.raw_path, "rerun")
    _out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err[-3000:]
    summary = json.loads(summary_path.read_text())
    assert summary["run_id"] == "rerun" and summary["published"] is True
    counts = ("messages", "valid", "quarantined", "duplicates_dropped")
    assert [summary[k] for k in counts] == [first[k] for k in counts]
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    assert _rows(lake, VALID) == valid and _rows(lake, QUARANTINE) == quarantined
    table = tables.table(VALID)
    assert table.metadata.refs[batch_tag(landed.batch_id)].snapshot_id == table.current_snapshot().snapshot_id
    assert audit_branch(landed.batch_id) not in table.metadata.refs
    assert not Path(lease_uri(lake, "orders", landed.batch_id)).exists()

    # The killed runs' files: no snapshot references them; the upkeep finds and removes them alone.
    killed_files = [p for p in Path(lake.root, "warehouse").rglob("run=killed-written/*.parquet")]
    assert killed_files
    done = subprocess.run([sys.executable, "-m", "foodtaster", "tables", "maintain", "--dataset",
                           "orders", "--lake", lake.root, "--grace-hours", "0", "--no-compact", "--json"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    removed = sum(t["orphans_removed"] for t in json.loads(done.stdout)["tables"])
    assert removed >= len(killed_files) and not any(p.exists() for p in killed_files)
    # every referenced file kept
    assert _rows(lake, VALID) == valid and _rows(lake, QUARANTINE) == quarantined
    for zone in (VALID, QUARANTINE):  # every snapshot still readable: time travel to the first run
        table = tables.table(zone)
        for snapshot in table.snapshots():
            table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
