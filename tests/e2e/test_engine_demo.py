"""`python -m foodtaster_dev demo`: generate, land, validate on local Spark, print what happened."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_engine_demo_prints_an_accounted_batch(tmp_path):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-m", "foodtaster_dev", "demo", "--lake", str(tmp_path), "--messages", "200"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    numbers = {k: int(re.search(rf"{k}\s+([\d,]+)", out).group(1).replace(",", ""))
               for k in ("messages", "valid", "quarantined", "duplicates dropped")}
    assert numbers["messages"] == 200
    assert numbers["messages"] == numbers["valid"] + numbers["quarantined"] + numbers["duplicates dropped"]
    assert "top reasons" in out and "json.invalid" in out
    summary = json.loads((tmp_path / "reports/orders/20261120/summary.json").read_text())
    assert summary["valid"] == numbers["valid"]
    assert ("published" in out) == summary["published"]
    assert "dataset=orders batch=20261120" in done.stderr  # structured logs name dataset and batch
    # One message kills the process of the contract's Python check: the job isolates it, lists
    # it, and finishes.
    planted = re.search(r"kills its process \(SIGSEGV\) on items 15; (\S+) line (\d+) has items 15", out)
    assert planted, out
    assert re.search(rf"crashed on 1 message\(s\), isolated them.*\n\s+{re.escape(planted.group(1))} line "
                     rf"{planted.group(2)}: worker died: signal 11 \(SIGSEGV\)", out), out
    assert [(i["source_file"].rsplit("/", 1)[1], i["line_number"]) for i in summary["crash_isolated"]] == [
        (planted.group(1), int(planted.group(2)))]
    assert summary["reasons"]["crash.isolated"] == 1
    assert "event=crash_isolation_step" in done.stderr and "event=crash_listed" in done.stderr
