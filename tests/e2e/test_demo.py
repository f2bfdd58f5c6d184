"""`make demo`: Airflow on SQLite, `airflow dags test` on a clean and a poisoned day."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_make_demo_publishes_the_clean_day_and_holds_the_poisoned_one(tmp_path):
    env = {**os.environ, "FOODTASTER_LAKE": str(tmp_path), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-m", "foodtaster_dev.demo_airflow"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    out = done.stdout
    clean, poisoned = out.split("airflow dags test foodtaster_orders 2026-11-21")
    assert "SUCCESS" in clean and "PUBLISHED" in clean and "alert=skipped" in clean
    assert "SUCCESS" in poisoned and "HELD (critical)" in poisoned and "publish=skipped" in poisoned
    # Two of the clean day's poison messages, listed after its run, come again: quarantined as listed.
    assert clean.count("  foodtaster poison add --batch 20261120 --file ") == 2
    assert clean.count("listed ") >= 2 and "listed:" not in clean
    assert "listed: 2 messages already on the poison list" in poisoned
    assert "2 of them resent from 2026-11-20" in out
    for day in (clean, poisoned):
        m = re.search(r"(\d+) messages, (\d+) valid, (\d+) quarantined, (\d+) duplicates dropped", day)
        messages, valid, quarantined, dropped = map(int, m.groups())
        assert messages == 500 == valid + quarantined + dropped
    assert (tmp_path / "valid/orders/batch_date=2026-11-20/batch_id=20261120").is_dir()
    # The poisoned day was held; the redrive part at the end fixed the contract, redrove and released it.
    held_day = tmp_path / "valid/orders/batch_date=2026-11-21"
    redrive_part = out.split("The contract fix:")[1]
    assert "DRY RUN, nothing moved" in redrive_part and "currency.isin" in redrive_part
    assert "batch 20261121: PUBLISHED, held because:" in redrive_part
    assert "released by airflow:" in redrive_part
    assert (held_day / "batch_id=20261121").is_dir() and list(held_day.glob("batch_id=redrive-*"))
    m = re.search(r"accounts of 20261121: (\d+) messages = (\d+) valid \+ (\d+) redriven \+ "
                  r"(\d+) quarantined \+ (\d+) duplicates dropped \+ (\d+) purged", redrive_part)
    messages, *parts = map(int, m.groups())
    assert messages == 500 == sum(parts) and parts[1] > 0
    alert = tmp_path / "_state/alerts/orders/20261121-batch.html"
    assert alert.is_file() and "20261121" in alert.read_text()
    summary = json.loads((tmp_path / "reports/orders/20261121/summary.json").read_text())
    assert summary["listed"] == 2 == summary["reasons"]["registry.listed"]
    # The nested dataset: its DAG on a day of order events, a reason naming an element's path.
    nested = out.split("airflow dags test foodtaster_order_events 2026-11-20")[1]
    nested = nested.split("The contract fix:")[0]
    assert "SUCCESS" in nested and "PUBLISHED" in nested
    m = re.search(r"(\d+) messages, (\d+) valid, (\d+) quarantined, (\d+) duplicates dropped", nested)
    messages, valid, quarantined, dropped = map(int, m.groups())
    assert messages == 400 == valid + quarantined + dropped and quarantined > 0
    assert re.search(r"data\.lines\[\d+\]\.\w+: data\.lines\[\]\.\w+\.", nested), nested
    assert "data: struct<order_id: string" in nested and "_unknown: map<string, string" in nested
    # The JetStream part runs whenever the machine's NATS answers (it does under CI).
    assert "Published 500 messages to JetStream" in out or "the JetStream demo is skipped" in out
    if "Published 500 messages" in out:
        stream_part = out.split("airflow dags test foodtaster_orders_stream")[1]
        assert "SUCCESS" in stream_part and "land=success" in stream_part
        m = re.search(r"(\d+) messages, (\d+) valid, (\d+) quarantined, (\d+) duplicates dropped",
                      stream_part)
        messages, valid, quarantined, dropped = map(int, m.groups())
        assert messages == 500 == valid + quarantined + dropped
        assert list((tmp_path / "valid/orders_stream").glob("batch_date=*/batch_id=*/*.parquet"))
