"""Land a run's messages from a Kafka topic: offsets committed only after the batch is durable.

The land task runs a consumer of its own in the source's `group` (confluent-kafka, with
`enable.auto.commit` and `enable.auto.offset.store` off). Where it starts in each partition
the group gives it is the lake's record, read when the partition is assigned: the offset after
the last one a raw manifest of the dataset holds for that partition (the group's committed
offset when that is further on, as after an operator's `--reset-offsets`; the earliest offset
for a partition never landed). It reads to the end of its partitions as they stood when the
run began (their high watermarks, read at the start), or up to the source's `max_messages` and
`max_bytes`, then:

1. writes the messages (value, key, headers, topic, partition, offset, timestamp) into one
   Parquet file of the raw partition: a hidden copy, fsynced, renamed into place;
2. writes the manifest with the offset ranges, the same way (the batch is landed from here on);
3. only then commits, synchronously, each partition's last offset + 1.

So a landing killed before step 2 leaves nothing in the lake and nothing committed: the next
one reads the same messages (nothing lost; a file a manifest does not list is removed first).
Killed after it, before or during the commit, the lake holds the messages and the group's
offsets lag: the next landing starts where the lake ends, not where the group says, and commits
(nothing twice). A partition taken away mid-run
(another member joined the group) drops what was read from it and not yet landed; its new
owner starts where the lake ends. A landing writes only after its last poll and commits before
its next one, so no rebalance completes in between: the group cannot hand a partition to
another member while this one writes it (unless the write outlasts `max.poll.interval.ms`;
the lake is read again just before the write, and what it holds is not landed twice).

The client's settings are the Airflow connection's extra (`kafka_conn_id`, the Kafka
provider's connection type: librdkafka's own keys, security included); this module never
logs them and scrubs their secret values from any error it raises.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import fsspec

from foodtaster.errors import Failed, UsageError
from foodtaster.landing import LandingResult
from foodtaster.logs import batch_logger
from foodtaster.registry import KafkaSource
from foodtaster.sources.raw_batch import (
    MANIFEST,
    KafkaOffsets,
    LandedFile,
    Manifest,
    OffsetRange,
    batch_id_for,
    landing_result,
    write_durable,
)
from foodtaster.state.lake import Lake, check_batch_id, fault_point, read_json

FETCH_BATCH = 1000  # messages taken from the client in one call
POLL_TIMEOUT_S = 0.5
# The settings the landing decides, whatever the connection says: its group, no commit or offset
# store of librdkafka's own (an auto-commit would run ahead of the lake), each partition's end told.
OWNED_SETTINGS = ("group.id", "enable.auto.commit", "enable.auto.offset.store", "enable.partition.eof")
# A default the connection may change: a landing that dies is out of the group within 10 s (the
# next one waits that long for its partitions).
DEFAULT_SETTINGS = {"session.timeout.ms": 10_000}
CLIENT_LOG = logging.getLogger("foodtaster.sources.kafka.client")
SECRET_KEY = re.compile(r"password|secret|\.key\b|key\.pem|token|credentials|sasl\.jaas", re.IGNORECASE)


class SourceUnavailable(Failed):
    """The cluster, the topic or the group cannot be reached: infrastructure, so the task fails
    and Airflow retries; nothing was committed."""


class KafkaSettingsError(UsageError):
    """The Kafka connection's settings contradict the source's (a refusal: fix the connection)."""


def scrub(text: str, settings: Mapping[str, Any]) -> str:
    """`text` with the value of every secret setting (a password, a key, a token) masked."""
    for key, value in settings.items():
        if SECRET_KEY.search(key) and isinstance(value, str) and value:
            text = text.replace(value, "***")
    return text


def client_settings(source: KafkaSource, connection: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The landing consumer's librdkafka settings: the connection's extra, with the group and
    the commits the landing owns. A connection naming the landing's group as its own `group.id`
    is refused: that is the group the wake-up trigger and the provider's operators commit in."""
    settings = dict(connection)
    if not settings.get("bootstrap.servers"):
        raise KafkaSettingsError(f"Kafka connection {source.kafka_conn_id!r}: its extra names no "
                                 "'bootstrap.servers' (the extra is the librdkafka config)")
    if settings.get("group.id") == source.group:
        raise KafkaSettingsError(
            f"Kafka connection {source.kafka_conn_id!r}: its group.id {source.group!r} is the landing's "
            "group; the wake-up trigger and the provider's operators commit as the connection's "
            "group: give the connection another group.id (docs/decisions/029)")
    settings.update({"group.id": source.group, "enable.auto.commit": False,
                     "enable.auto.offset.store": False, "enable.partition.eof": True,
                     "auto.offset.reset": "earliest"})
    settings.setdefault("client.id", f"foodtaster-{dataset}")
    settings.setdefault("logger", CLIENT_LOG)  # librdkafka's own lines, into the task's log
    for key, value in DEFAULT_SETTINGS.items():
        settings.setdefault(key, value)
    return settings


class LandedOffsets:
    """The offsets the lake holds for a topic: the ranges of every raw manifest of the dataset."""

    def __init__(self, ranges: Iterable[OffsetRange]) -> None:
        self._ranges: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for r in ranges:
            self._ranges[r.partition].append((r.first, r.last))

    def next_offset(self, partition: int) -> int | None:
        """The offset after the last the lake holds of `partition`; None if it holds none."""
        spans = self._ranges.get(partition)
        return max(last for _, last in spans) + 1 if spans else None

    def __contains__(self, place: tuple[int, int]) -> bool:
        partition, offset = place
        return any(first <= offset <= last for first, last in self._ranges.get(partition, ()))

    def ranges(self) -> list[OffsetRange]:
        return [OffsetRange(p, first, last) for p, spans in sorted(self._ranges.items())
                for first, last in sorted(spans)]

    @classmethod
    def read(cls, lake: Lake, dataset: str, topic: str) -> LandedOffsets:
        fs, raw = fsspec.core.url_to_fs(lake.zone("raw", dataset))
        ranges: list[OffsetRange] = []
        for path in fs.glob(f"{raw}/batch_date=*/batch_id=*/{MANIFEST}") if fs.exists(raw) else []:
            source = Manifest.from_dict(read_json(fs.unstrip_protocol(path))).source
            if isinstance(source, KafkaOffsets) and source.topic == topic:
                ranges.extend(source.offset_ranges)
        return cls(ranges)


def offset_ranges(taken: Mapping[int, list[int]], previous: Iterable[OffsetRange] = ()) -> list[OffsetRange]:
    """A batch's ranges: each partition's offsets read in one go as one range (the messages of a
    partition are read without a gap), merged with the batch's earlier ranges where they touch."""
    spans = sorted([*((r.partition, r.first, r.last) for r in previous),
                    *((p, min(offsets), max(offsets)) for p, offsets in taken.items() if offsets)])
    merged: list[list[int]] = []
    for partition, first, last in spans:
        if merged and merged[-1][0] == partition and first <= merged[-1][2] + 1:
            merged[-1][2] = max(merged[-1][2], last)
        else:
            merged.append([partition, first, last])
    return [OffsetRange(p, a, b) for p, a, b in merged]


@dataclass(frozen=True)
class TopicSource:
    """A Kafka topic read by the land task's own consumer, as a `foodtaster.sources.Source`;
    `connection` is the librdkafka config of the source's Airflow connection."""

    config: KafkaSource
    connection: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def land_batch(self, lake: Lake, dataset: str, date: str, batch_id: str | None = None,
                   hour: int | None = None) -> LandingResult:
        return land_batch(self.config, lake, dataset, date, batch_id=batch_id, hour=hour,
                          connection=self.connection)


@dataclass
class _Reading:
    """What one landing's consumer holds: the partitions the group gave it, where each ends,
    the messages read and not yet landed, and the committed offsets seen at assignment."""

    topic: str
    start_ends: dict[int, int]  # high watermarks read when the run began
    owned: set[int] = field(default_factory=set)
    ends: dict[int, int] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)
    taken: dict[int, list[Any]] = field(default_factory=lambda: defaultdict(list))
    committed: dict[int, int] = field(default_factory=dict)
    assigned: bool = False  # the group's assignment is in (and no revocation since)
    waiting_since: float = field(default_factory=time.monotonic)  # when it was last asked for
    rebalances: int = 0
    dropped: int = 0  # messages read from a partition taken away, left for its new owner

    @property
    def count(self) -> int:
        return sum(len(messages) for messages in self.taken.values())

    def release(self, partitions: Iterable[int]) -> None:
        for p in partitions:
            self.dropped += len(self.taken.pop(p, []))
            self.owned.discard(p)
            self.done.discard(p)
            self.ends.pop(p, None)


def land_batch(
    source: KafkaSource,
    lake: Lake,
    dataset: str,
    date: str,
    batch_id: str | None = None,
    hour: int | None = None,
    connection: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> LandingResult:
    """Land the group's waiting messages (to the partitions' ends as the run began, within the
    limits) into `batch_id`, then commit them. A rerun of a batch keeps what it holds and adds
    what waits since. Raises SourceUnavailable when the cluster cannot be read; nothing is
    committed then."""
    from confluent_kafka import Consumer, KafkaException

    batch_id = check_batch_id(batch_id or batch_id_for(date, hour))
    raw_path = lake.raw(dataset, date, batch_id)
    log = batch_logger(__name__, dataset, batch_id)
    settings = client_settings(source, connection or {}, dataset)
    errors: list[str] = []
    settings["error_cb"] = lambda err: errors.append(scrub(str(err), settings))
    try:
        consumer = Consumer(settings)
    except KafkaException as err:
        raise KafkaSettingsError(f"Kafka connection {source.kafka_conn_id!r}: "
                                 f"{scrub(str(err), settings)}") from None
    try:
        reading = _Reading(source.topic, _start_ends(consumer, source, settings, errors))
        _subscribe(consumer, reading, lake, dataset, source, settings)
        full = _read(consumer, reading, source, settings, errors, log)
        fault_point("kafka.polled")  # a test kills the landing here: read, nothing landed
        landed = LandedOffsets.read(lake, dataset, source.topic)  # again: what a slow write met
        taken = {p: [m for m in messages if (p, m.offset()) not in landed]
                 for p, messages in reading.taken.items()}
        taken = {p: messages for p, messages in taken.items() if messages}
        manifest = _write(lake, dataset, date, hour, batch_id, source, Manifest.read(raw_path), taken, now)
        fault_point("kafka.landed")  # ... here: landed, nothing committed
        committed = _commit(consumer, reading, landed, taken, log)
        held, rebalances, dropped = sorted(reading.owned), reading.rebalances, reading.dropped
    finally:
        consumer.close()  # leaves the group: its partitions go to the next landing at once
    result = landing_result(manifest, raw_path, lake.root)
    log.event(
        "landed", source="kafka", topic=source.topic, group=source.group,
        new=sum(len(m) for m in taken.values()), messages=result.messages, partitions=held,
        full=full, rebalances=rebalances, left_for_new_owner=dropped,
        committed={str(p): o for p, o in sorted(committed.items())}, raw_path=raw_path,
    )
    return result


def _start_ends(consumer: Any, source: KafkaSource, settings: Mapping[str, Any],
                errors: list[str]) -> dict[int, int]:
    """The topic's partitions and their high watermarks, as the run begins."""
    from confluent_kafka import KafkaException, TopicPartition

    timeout = source.connect_timeout_seconds
    try:
        metadata = consumer.list_topics(source.topic, timeout=timeout)
        topic = metadata.topics.get(source.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            why = topic.error if topic is not None and topic.error is not None else "no partitions"
            raise SourceUnavailable(f"Kafka topic {source.topic!r} cannot be read: {why}")
        return {p: consumer.get_watermark_offsets(TopicPartition(source.topic, p), timeout=timeout,
                                                  cached=False)[1]
                for p in sorted(topic.partitions)}
    except KafkaException as err:
        seen = f" ({'; '.join(errors[-3:])})" if errors else ""
        raise SourceUnavailable(f"Kafka at {settings['bootstrap.servers']} cannot be reached: "
                                f"{scrub(str(err), settings)}{seen}") from None


def _subscribe(consumer: Any, reading: _Reading, lake: Lake, dataset: str, source: KafkaSource,
               settings: Mapping[str, Any]) -> None:
    """Join the group; each partition it gives starts where the lake ends (or further, where the
    group's committed offset is further); a partition taken away drops what was read of it."""
    from confluent_kafka import OFFSET_BEGINNING

    cooperative = "cooperative" in str(settings.get("partition.assignment.strategy", ""))

    def on_assign(consumer: Any, partitions: list[Any]) -> None:
        reading.assigned = True
        if not partitions:
            return
        landed = LandedOffsets.read(lake, dataset, source.topic)
        committed = consumer.committed(partitions, timeout=source.connect_timeout_seconds)
        for tp, seen in zip(partitions, committed, strict=True):
            group_at = seen.offset if seen.offset >= 0 else None
            if group_at is not None:
                reading.committed[tp.partition] = group_at
            starts = [o for o in (landed.next_offset(tp.partition), group_at) if o is not None]
            tp.offset = max(starts) if starts else OFFSET_BEGINNING
            reading.owned.add(tp.partition)
        (consumer.incremental_assign if cooperative else consumer.assign)(partitions)

    def on_revoke(consumer: Any, partitions: list[Any]) -> None:
        reading.rebalances += 1
        reading.release(tp.partition for tp in partitions)
        if cooperative:
            consumer.incremental_unassign(partitions)
        else:  # eager: every partition goes back; the group's next assignment follows
            reading.assigned = False
            reading.waiting_since = time.monotonic()

    consumer.subscribe([source.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)


def _read(consumer: Any, reading: _Reading, source: KafkaSource, settings: Mapping[str, Any],
          errors: list[str], log: Any) -> bool:
    """Poll until every partition held is at its end, or the batch is full (True). A partition
    at its end says so (`enable.partition.eof`); one silent for `connect_timeout_seconds` after
    the assignment is left where it is, with a warning (nothing of it is committed)."""
    from confluent_kafka import KafkaError, TopicPartition

    quiet_since = time.monotonic()
    size = 0
    while True:
        batch = consumer.consume(num_messages=FETCH_BATCH, timeout=POLL_TIMEOUT_S)
        if batch:
            quiet_since = time.monotonic()
        deadline = max(quiet_since, reading.waiting_since) + source.connect_timeout_seconds
        for message in batch:
            error = message.error()
            p = message.partition()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if p in reading.owned:
                        reading.done.add(p)
                    continue
                if error.fatal() or error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                                     KafkaError.GROUP_AUTHORIZATION_FAILED,
                                                     KafkaError.UNKNOWN_TOPIC_OR_PART):
                    raise SourceUnavailable(f"Kafka topic {source.topic!r}: {scrub(str(error), settings)}")
                errors.append(scrub(str(error), settings))
                continue
            if p not in reading.owned or p in reading.done:
                continue  # a partition taken away, or read to its end
            if p not in reading.ends:
                # The end as the run began: the high watermark read then, or the first fetch's
                # when that is further (Tansu's ListOffsets counts record batches short,
                # docs/decisions/028).
                fetched = consumer.get_watermark_offsets(TopicPartition(source.topic, p), cached=True)[1]
                reading.ends[p] = max(reading.start_ends.get(p, 0), fetched)
            offset = message.offset()
            if offset >= reading.ends[p]:
                reading.done.add(p)
                continue
            value = message.value() or b""
            over = reading.count and size + len(value) > source.max_bytes
            if reading.count >= source.max_messages or over:
                return True
            reading.taken[p].append(message)
            size += len(value)
            if offset + 1 >= reading.ends[p]:
                reading.done.add(p)
        if reading.assigned and reading.owned <= reading.done:
            return False
        if reading.count:
            fault_point("kafka.reading")  # a test holds the landing mid-read (another member joins)
        if time.monotonic() > deadline:
            seen = f": {'; '.join(errors[-3:])}" if errors else ""
            if not reading.assigned:
                raise SourceUnavailable(f"Kafka group {source.group!r} gave no partition of "
                                        f"{source.topic!r} within {source.connect_timeout_seconds:g} s{seen}")
            silent = sorted(reading.owned - reading.done)
            log.warning(
                "event=partitions_silent", fields={"topic": source.topic, "partitions": silent,
                                                   "errors": errors[-3:]})
            reading.done.update(silent)
            return False


def _commit(consumer: Any, reading: _Reading, landed: LandedOffsets, taken: Mapping[int, list[Any]],
            log: Any) -> dict[int, int]:
    """Commit, one partition at a time and synchronously, the offset after the last one the lake
    holds of each partition held: this batch's, or an earlier landing's that died before its
    commit. A commit that fails is logged: the lake holds the batch, and the next landing starts
    from the lake and commits."""
    from confluent_kafka import KafkaException, TopicPartition

    targets = {p: landed.next_offset(p) for p in reading.owned}
    targets.update({p: messages[-1].offset() + 1 for p, messages in taken.items()})
    due = {p: o for p, o in sorted(targets.items()) if o is not None and o > reading.committed.get(p, -1)}
    committed: dict[int, int] = {}
    for p, offset in due.items():
        try:
            consumer.commit(offsets=[TopicPartition(reading.topic, p, offset)], asynchronous=False)
        except KafkaException as err:
            log.warning("event=commit_failed", fields={"partition": p, "offset": offset, "error": str(err)})
            continue
        committed[p] = offset
        fault_point("kafka.committing")  # ... or here: some partitions committed, not all
    return committed


def _record(message: Any) -> dict[str, Any]:
    kind, millis = message.timestamp()
    value = message.value()
    return {
        "payload": value if value is not None else b"",
        "value_is_null": value is None,
        "key": message.key(),
        "headers": [{"key": k, "value": v} for k, v in (message.headers() or [])],
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": datetime.fromtimestamp(millis / 1000, UTC) if millis >= 0 else None,
        "timestamp_type": kind,
    }


def _write(lake: Lake, dataset: str, date: str, hour: int | None, batch_id: str, source: KafkaSource,
           previous: Manifest | None, taken: Mapping[int, list[Any]], now: datetime | None) -> Manifest:
    """The messages' Parquet file, then the manifest, each durable before the next step: a
    partition without a manifest listing a file was never landed with it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw_path = lake.raw(dataset, date, batch_id)
    _drop_unlisted(raw_path, previous)
    before = previous.source if previous is not None and isinstance(previous.source, KafkaOffsets) else None
    previous_ranges = before.offset_ranges if before else ()
    if previous is not None and not taken:
        return previous
    files = list(previous.files) if previous else []
    ranges = list(previous_ranges)
    if taken:
        records = [_record(m) for p in sorted(taken) for m in taken[p]]
        new_ranges = offset_ranges({p: [m.offset() for m in messages] for p, messages in taken.items()})
        digest = hashlib.sha256(json.dumps([r.as_dict() for r in new_ranges]).encode()).hexdigest()[:16]
        name = f"messages-{digest}.parquet"
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(records, schema=messages_schema()), buffer)
        data = buffer.getvalue()
        write_durable(f"{raw_path}/{name}", data)
        fault_point("kafka.written")  # a test kills the landing here: a file, no manifest yet
        files.append(LandedFile(name=name, source=f"kafka://{source.topic}", bytes=len(data),
                                sha256=hashlib.sha256(data).hexdigest(), lines=len(records)))
        ranges = offset_ranges({p: [m.offset() for m in messages] for p, messages in taken.items()},
                               previous_ranges)
    manifest = Manifest(
        dataset=dataset, batch_id=batch_id, batch_date=date, hour=hour, inbox=None,
        landed_at=(previous and previous.landed_at) or (now or datetime.now(UTC)).isoformat(),
        files=tuple(files),
        source=KafkaOffsets(topic=source.topic, group=source.group, offset_ranges=tuple(ranges)),
    )
    manifest.write(raw_path, durable=True)
    return manifest


def _drop_unlisted(raw_path: str, previous: Manifest | None) -> None:
    """Remove what a landing killed before its manifest left in the partition (a message file the
    manifest does not list, a hidden copy in flight): never landed, never committed, its messages
    read again by this landing; left there, the job would read them twice."""
    fs, folder = fsspec.core.url_to_fs(raw_path)
    if not fs.exists(folder):
        return
    listed = {entry.name for entry in previous.files} if previous else set()
    for path in [*fs.glob(f"{folder}/messages-*.parquet"), *fs.glob(f"{folder}/.messages-*.landing")]:
        if path.rsplit("/", 1)[-1] not in listed:
            fs.rm(path)


def messages_schema() -> Any:
    """The raw Parquet file of a Kafka landing: one row a message, every byte as received."""
    import pyarrow as pa

    return pa.schema([
        ("payload", pa.binary()),
        ("value_is_null", pa.bool_()),  # a tombstone: landed as an empty payload
        ("key", pa.binary()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestamp_type", pa.int8()),
    ])
