"""Waking a Kafka dataset's DAG when messages wait: an Asset watched by the Kafka provider's
`AwaitMessageTrigger`, used only as a wake-up (docs/decisions/029).

The trigger runs in the triggerer with the connection's own consumer group (its `group.id`,
never the landing's: the land task refuses a connection that names it). It fires on a message,
commits that message's offset in ITS group, and the Asset event wakes the DAG; the run's land
task then reads everything waiting with the landing's group, from where the lake ends, and
commits only once the batch is in the lake. So the trigger's commit is not the landing: a
triggerer that dies, an event dropped or doubled, or a trigger's group that runs ahead
(Airflow #64205) loses and repeats nothing, it only wakes a run sooner or later. The schedule
still runs, so a wake-up missed is a batch landed at the next scheduled run.

The event carries where the waking message is (topic, partition, offset), never its bytes:
Asset events are shown in the UI, and a message may hold personal data.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Asset, AssetWatcher

from foodtaster.registry import DatasetConfig, KafkaSource

APPLY_FUNCTION = "foodtaster_airflow.kafka_wake.waiting"
POLL_INTERVAL_S = 5.0  # the trigger's sleep after a message it does not wake on (none here)


def wake_uri(dataset: str) -> str:
    return f"foodtaster://messages-waiting/{dataset}"


def wake_asset(config: DatasetConfig) -> Asset | None:
    """The Asset a Kafka dataset's DAG is also scheduled on, when its source wakes on messages."""
    source = config.source
    if not isinstance(source, KafkaSource) or not source.wake_on_messages:
        return None
    from airflow.providers.apache.kafka.triggers.await_message import AwaitMessageTrigger

    trigger = AwaitMessageTrigger(
        topics=[source.topic], apply_function=APPLY_FUNCTION, kafka_config_id=source.kafka_conn_id,
        poll_timeout=1, poll_interval=POLL_INTERVAL_S, commit_offset=True,
    )
    uri = wake_uri(config.name)
    return Asset(name=uri, uri=uri, group="foodtaster",
                 watchers=[AssetWatcher(name=f"foodtaster_{config.name}_kafka_wake", trigger=trigger)])


def waiting(message: Any) -> dict[str, Any]:
    """The trigger's apply function: every message wakes the DAG; the event names where it is."""
    return {"topic": message.topic(), "partition": message.partition(), "offset": message.offset()}
