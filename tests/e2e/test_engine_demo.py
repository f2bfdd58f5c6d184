"""`python -m foodtaster demo`: generate, land, validate on local Spark, print what happened."""

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
        [sys.executable, "-m", "foodtaster", "demo", "--lake", str(tmp_path), "--messages", "800"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    numbers = {k: int(re.search(rf"{k}\s+([\d,]+)", out).group(1).replace(",", ""))
               for k in ("messages", "valid", "quarantined", "duplicates dropped")}
    assert numbers["messages"] == 800
    assert numbers["messages"] == numbers["valid"] + numbers["quarantined"] + numbers["duplicates dropped"]
    assert "top reasons" in out and "json.invalid" in out
    summary = json.loads((tmp_path / "reports/orders/20261120/summary.json").read_text())
    assert summary["valid"] == numbers["valid"]
    assert ("published" in out) == summary["published"]
    assert "dataset=orders batch=20261120" in done.stderr  # structured logs name dataset and batch
