"""`airflow dags test` of a dataset fed from Kafka (a Tansu broker started for the module, stopped
by its pid): land with the landing's own group through a connection of the Kafka provider's type,
the real Spark job, gate, publish, ledger, the dead-letter topic; the DAG parsed with its wake-up
Asset watched by the provider's trigger (tests/unit/test_kafka_wiring.py checks the watcher).
Every message counted, the group committed to the partitions' ends, each quarantined message on
the dead-letter topic once, and the connection's password in no log."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml
from support.kafka import (  # noqa: F401  (the fixtures kafka_broker and kafka_topic)
    FAST_GROUP,
    committed,
    fresh_topic,
    tansu_broker,
    topic_messages,
)
from support.lake import row_count

from foodtaster.registry import PROJECT_ROOT
from foodtaster.state import ledger
from foodtaster.state.lake import Lake
from foodtaster_dev.kafka_broker import create_topic, produce
from foodtaster_dev.localenv import LocalAirflow
from foodtaster_dev.sample import generate_batch

pytestmark = pytest.mark.slow
DATASET = "orders_kafka"
PASSWORD = "kafka-pw-Zq81x-never-logged"


def test_a_dataset_fed_from_kafka_runs_end_to_end_and_keeps_its_secret(kafka_broker, kafka_topic, tmp_path):
    date = datetime.now(UTC).date().isoformat()
    generated = generate_batch(tmp_path / "gen", messages=300, seed=9, poison_rate=0.05, files=1,
                               gzip_files=0, batch_date=date, max_message_bytes=4096)
    lines = (tmp_path / "gen" / generated.files[0]).read_bytes().splitlines()
    produce(kafka_broker.bootstrap, kafka_topic, [(None, line, None, None) for line in lines])
    dead_letters = f"{kafka_topic}-dlq"
    create_topic(kafka_broker.bootstrap, dead_letters, partitions=1)
    group = f"{kafka_topic}-lander"
    registry = yaml.safe_load((PROJECT_ROOT / "pipeline.yaml").read_text())
    registry["datasets"] = {DATASET: {
        **registry["datasets"]["orders"], "schedule": "@daily", "alerts": {}, "max_message_bytes": 4096,
        "source": {"kind": "kafka", "topic": kafka_topic, "group": group, "kafka_conn_id": "kafka_test",
                   "dead_letter_topic": dead_letters, "wake_on_messages": True},
    }}
    registry_file = tmp_path / "pipeline.yaml"
    registry_file.write_text(yaml.safe_dump(registry))
    lake = str(tmp_path / "lake")
    # SASL settings on a plaintext listener: librdkafka keeps them unused; the password still
    # travels through the connection, the land task and the dead-letter task.
    extra = {"bootstrap.servers": kafka_broker.bootstrap, "group.id": f"{kafka_topic}-wake",
             "sasl.username": "lander", "sasl.password": PASSWORD, **FAST_GROUP}
    airflow = LocalAirflow(home=tmp_path / "airflow", lake=lake, registry=registry_file,
                           connections={"kafka_test": {"conn_type": "kafka", "extra": extra}})
    airflow.migrate()
    log = tmp_path / "run.log"

    run = airflow.dags_test(f"foodtaster_{DATASET}", date, log=log)

    assert run["state"] == "success", f"{run}\n{log.read_text()[-5000:]}"
    assert {task: run["tasks"][task] for task in ("land", "validate", "publish", "dead_letters")} == \
        dict.fromkeys(("land", "validate", "publish", "dead_letters"), "success")
    (entry,) = ledger.batch_entries(Lake(lake), DATASET)
    assert entry["messages"] == len(lines) == generated.messages
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]
    expected = generated.counts()
    assert (entry["valid"], entry["quarantined"]) == (expected["valid"], expected["quarantined"])
    assert row_count(Lake(lake), DATASET, "valid", entry["batch_id"]) == entry["valid"]
    ends = {p: 0 for p in range(3)}
    for message in topic_messages(kafka_broker, kafka_topic):
        ends[message.partition()] = max(ends[message.partition()], message.offset() + 1)
    assert committed(kafka_broker, group, kafka_topic) == ends  # after the lake held them
    letters = topic_messages(kafka_broker, dead_letters, partitions=1)
    assert len(letters) == entry["quarantined"] > 0
    assert all(dict(letter.headers())["__foodtaster.errors.batch.id"] == entry["batch_id"].encode()
               for letter in letters)
    written = [log, *(tmp_path / "airflow").rglob("*.log"), *(tmp_path / "lake").rglob("*.json")]
    leaked = [str(path) for path in written
              if path.is_file() and PASSWORD in path.read_text(errors="replace")]
    assert leaked == [], f"the connection's password is in {leaked}"
    assert "sasl.password" in json.dumps(extra)  # the secret was there to leak
