"""A Kafka dataset's DAG and land step, without a broker: the wake-up Asset watched by the Kafka
provider's trigger (a wake-up only: it commits in the connection's group, never the landing's),
the dead-letter task after validate, a woken run's batch of its own, the connection read at run
time and refused when it is not the Kafka provider's type; the raw manifest's offsets."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
import yaml

from foodtaster.registry import PROJECT_ROOT, KafkaSource, load_registry
from foodtaster.sources.kafka import KafkaSettingsError, LandedOffsets, client_settings, offset_ranges, scrub
from foodtaster.sources.raw_batch import KafkaOffsets, Manifest, OffsetRange
from foodtaster_airflow import kafka_wake, steps


def registry(tmp_path, **source) -> dict:
    document = yaml.safe_load((PROJECT_ROOT / "pipeline.yaml").read_text())
    document["datasets"] = {"orders_kafka": {**document["datasets"]["orders"], "source": {
        "kind": "kafka", "topic": "orders", "group": "foodtaster-orders", **source}}}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_registry(path)


def test_a_dataset_woken_by_messages_runs_on_its_schedule_and_on_the_providers_trigger(tmp_path):
    from airflow.providers.apache.kafka.triggers.await_message import AwaitMessageTrigger
    from airflow.sdk import AssetOrTimeSchedule

    from foodtaster_airflow.factory import build_dag

    config = registry(tmp_path, wake_on_messages=True, kafka_conn_id="kafka_shop",
                      dead_letter_topic="orders-dlq")["orders_kafka"]
    dag = build_dag(config)

    assert isinstance(dag.timetable, AssetOrTimeSchedule)
    asset = dag.timetable.asset_condition
    assert asset.uri == "foodtaster://messages-waiting/orders_kafka"
    (watcher,) = asset.watchers
    trigger = watcher.trigger
    assert isinstance(trigger, AwaitMessageTrigger)
    _classpath, kwargs = trigger.serialize()
    assert kwargs["topics"] == ["orders"] and kwargs["kafka_config_id"] == "kafka_shop"
    assert kwargs["apply_function"] == kafka_wake.APPLY_FUNCTION
    assert dag.get_task("dead_letters").upstream_task_ids == {"land", "validate"}  # land: its XCom
    plain = build_dag(registry(tmp_path)["orders_kafka"])  # no dead-letter topic, no wake-up
    assert "dead_letters" not in plain.task_ids
    assert type(plain.timetable).__name__ == "CronDataIntervalTimetable"


def test_the_wake_up_event_names_where_a_message_is_never_its_bytes():
    message = SimpleNamespace(topic=lambda: "orders", partition=lambda: 2, offset=lambda: 41,
                              value=lambda: b'{"email": "someone@example.com"}')
    assert kafka_wake.waiting(message) == {"topic": "orders", "partition": 2, "offset": 41}


def test_a_woken_run_lands_a_batch_of_its_own_and_other_runs_none():
    woken = {"dag_run": SimpleNamespace(run_type="asset_triggered"),
             "run_after": datetime(2026, 11, 20, 14, 5, 9, tzinfo=UTC)}
    at = steps.woken_at(woken)
    assert at is not None and steps.woken_batch_id(at) == "20261120T140509"
    assert steps.woken_at({"dag_run": SimpleNamespace(run_type="scheduled")}) is None
    assert steps.woken_at({}) is None


def test_the_connection_is_the_kafka_providers_and_its_group_is_not_the_landings(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_SHOP", '{"conn_type": "kafka", "extra": '
                       '{"bootstrap.servers": "b:9092", "sasl.password": "pw-1"}}')
    monkeypatch.setenv("AIRFLOW_CONN_NOT_KAFKA", '{"conn_type": "http", "host": "example.com"}')
    assert steps.kafka_connection("kafka_shop") == {"bootstrap.servers": "b:9092", "sasl.password": "pw-1"}
    with pytest.raises(KafkaSettingsError, match="of type 'http', not 'kafka'"):
        steps.kafka_connection("not_kafka")
    with pytest.raises(KafkaSettingsError, match="'kafka_missing' is not defined"):
        steps.kafka_connection("kafka_missing")
    source = KafkaSource(topic="orders", group="foodtaster-orders")
    settings = client_settings(source, {"bootstrap.servers": "b:9092", "enable.auto.commit": True,
                                        "group.id": "wake"}, "orders")
    assert (settings["group.id"], settings["enable.auto.commit"], settings["enable.auto.offset.store"]) == \
        ("foodtaster-orders", False, False)
    with pytest.raises(KafkaSettingsError, match="is the landing's group"):
        client_settings(source, {"bootstrap.servers": "b:9092", "group.id": "foodtaster-orders"}, "orders")
    assert scrub("failed: pw-1 and b:9092", {"sasl.password": "pw-1", "bootstrap.servers": "b:9092"}) == \
        "failed: *** and b:9092"


def test_offsets_are_kept_as_ranges_and_the_next_landing_starts_after_the_last():
    assert offset_ranges({0: [5, 6, 7], 2: [0]}, [OffsetRange(0, 0, 4), OffsetRange(1, 0, 9)]) == [
        OffsetRange(0, 0, 7), OffsetRange(1, 0, 9), OffsetRange(2, 0, 0)]
    landed = LandedOffsets([OffsetRange(0, 0, 7), OffsetRange(0, 10, 12), OffsetRange(1, 0, 9)])
    assert (landed.next_offset(0), landed.next_offset(1), landed.next_offset(2)) == (13, 10, None)
    assert (0, 11) in landed and (0, 8) not in landed
    manifest = Manifest(dataset="d", batch_id="b", batch_date="2026-11-20", hour=None, inbox=None,
                        landed_at=None, files=(), source=KafkaOffsets("orders", "g", (OffsetRange(1, 3, 4),)))
    assert Manifest.from_dict(manifest.as_dict()) == manifest
