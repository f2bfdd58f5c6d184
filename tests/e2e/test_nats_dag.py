"""`airflow dags test` of a dataset fed from the real JetStream: land from a durable consumer,
the real Spark job, gate, publish, ledger; every message counted, every message acknowledged."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml
from support.jetstream import NATS_URL, consumer_state, nats_stream, publish  # noqa: F401  (the `stream` fixture)
from support.lake import row_count

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state import ledger
from foodtaster.state.lake import Lake
from foodtaster.state.tables import VALID
from foodtaster_dev.localenv import LocalAirflow
from foodtaster_dev.sample import generate_batch

pytestmark = pytest.mark.slow
DATASET = "orders_stream"


def test_a_dataset_fed_from_jetstream_runs_end_to_end(stream, tmp_path):
    name, subject = stream
    date = datetime.now(UTC).date().isoformat()  # the interval of today holds what is published now
    generated = generate_batch(tmp_path / "gen", messages=300, seed=9, poison_rate=0.02, files=1,
                               gzip_files=0, batch_date=date, max_message_bytes=4096)
    sequences = publish(subject, (tmp_path / "gen" / generated.files[0]).read_bytes().splitlines())
    registry = yaml.safe_load((PROJECT_ROOT / "pipeline.yaml").read_text())
    durable = f"{name}-lander"
    registry["datasets"] = {DATASET: {
        **registry["datasets"]["orders"], "schedule": None, "alerts": {}, "max_message_bytes": 4096,
        "source": {"kind": "nats", "url": NATS_URL, "stream": name, "subject": f"{subject}.>",
                   "durable": durable},
    }}
    registry_file = tmp_path / "pipeline.yaml"
    registry_file.write_text(yaml.safe_dump(registry))
    lake = str(tmp_path / "lake")
    airflow = LocalAirflow(home=tmp_path / "airflow", lake=lake, registry=registry_file)
    airflow.migrate()
    log = tmp_path / "run.log"

    run = airflow.dags_test(f"foodtaster_{DATASET}", date, log=log)

    assert run["state"] == "success", f"{run}\n{log.read_text()[-5000:]}"
    assert run["tasks"]["land"] == run["tasks"]["validate"] == run["tasks"]["publish"] == "success"
    (entry,) = ledger.batch_entries(Lake(lake), DATASET)
    expected = generated.counts()
    assert entry["messages"] == len(sequences) == generated.messages
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]
    assert (entry["valid"], entry["quarantined"]) == (expected["valid"], expected["quarantined"])
    assert row_count(Lake(lake), DATASET, VALID, entry["batch_id"]) == entry["valid"]
    assert consumer_state(name, durable) == (0, 0)  # all acknowledged, after the lake held them
