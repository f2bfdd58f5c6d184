"""Real job processes of one batch: a second run while the first holds the batch is refused,
a kill -9 of the whole process group mid-swap destroys nothing, and the next run takes over
and rewrites the same partitions. The moment of the kill is the job's own `fault_point`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from foodtaster.engine.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, Lake
from foodtaster.state.lease import lease_uri
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


def _rows(spark, path: str) -> list[tuple]:
    frame = spark.read.parquet(path)
    return sorted(tuple(map(str, row)) for row in frame.collect())


def test_a_second_run_is_refused_and_a_kill_mid_swap_destroys_nothing(spark, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    sample.generate_batch(Path(lake.inbox("orders", DATE)), messages=200, seed=4, poison_rate=0.1,
                          files=2, gzip_files=1, kinds=["redelivery", "nan", "bad_timestamp"])
    landed = land_batch(lake, "orders", DATE)
    first = run_batch(spark, BatchRun(config=get_dataset("orders"), input_path=landed.raw_path,
                                      lake=lake, batch_id=landed.batch_id, batch_date=DATE,
                                      gate=False, run_id="first")).to_json()
    valid_path = lake.valid("orders", DATE, landed.batch_id)
    quarantine_path = lake.quarantine("orders", DATE, landed.batch_id)
    summary_path = Path(lake.summary("orders", landed.batch_id))
    valid, quarantined = _rows(spark, valid_path), _rows(spark, quarantine_path)
    assert first["published"] and len(valid) == first["valid"]

    faults = tmp_path / "faults"
    faults.mkdir()
    killed = _job(lake, landed.raw_path, "killed", **{FAULT_AT_ENV: "quarantine_swapped",
                                                      FAULT_DIR_ENV: str(faults)})
    try:
        deadline = time.monotonic() + 300
        while not (faults / "quarantine_swapped.reached").exists():
            assert killed.poll() is None, killed.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the job never reached the fault point"
            time.sleep(0.1)

        refused = _job(lake, landed.raw_path, "second")
        out, err = refused.communicate(timeout=300)
        assert refused.returncode != 0 and "is held by run killed" in err, err[-3000:]
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()

    # Killed after swapping in its quarantine, before its valid rows: both partitions whole.
    assert _rows(spark, valid_path) == valid and _rows(spark, quarantine_path) == quarantined
    assert json.loads(summary_path.read_text())["run_id"] == "first"
    assert json.loads(Path(lease_uri(lake, "orders", landed.batch_id)).read_text())["run_id"] == "killed"

    rerun = _job(lake, landed.raw_path, "rerun")
    out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err[-3000:]
    summary = json.loads(summary_path.read_text())
    assert summary["run_id"] == "rerun" and summary["published"] is True
    counts = ("messages", "valid", "quarantined", "duplicates_dropped")
    assert [summary[k] for k in counts] == [first[k] for k in counts]
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    assert _rows(spark, valid_path) == valid and _rows(spark, quarantine_path) == quarantined
    assert not Path(lease_uri(lake, "orders", landed.batch_id)).exists()
    assert not any(Path(lake.root).glob("*/orders/_runs/*/*/run=*"))
