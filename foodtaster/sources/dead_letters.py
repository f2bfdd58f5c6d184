"""The dead-letter topic of a Kafka source: each quarantined message of a batch produced there
once, after the batch's quarantine is written (opt-in: `dead_letter_topic` in the registry).

A dead letter is what Kafka Connect's dead-letter queue carries (`errors.tolerance=all`,
`errors.deadletterqueue.context.headers.enable=true`): the original record - its exact value
bytes, its key, its headers - plus headers saying what went wrong, named as Connect names its
`__connect.errors.*` context headers:

    __foodtaster.errors.topic / .partition / .offset   where the message was read
    __foodtaster.errors.dataset / .batch.id / .batch.date
    __foodtaster.errors.rule / .layer / .message      its first reason (the rule a consumer routes on)
    __foodtaster.errors.reasons                       every reason, JSON: [{layer, rule, column,
                                                      message, value}], as the quarantine wrote them

The value is the exact bytes, as in Connect's queue: the dead-letter topic is a machine's channel
for reprocessing, read under the topic's ACLs like the topic it came from. The reasons are those
a person reads, with every personal value masked (docs/decisions/023): a header is shown by any
topic browser. docs/decisions/030 says why.

Nothing is produced twice. The messages sent are remembered in the lake, an append-only log
under `_state/dead_letters/<dataset>/`: before producing, a `sending` event with the dead-letter
topic's ends; after every copy is acknowledged (an idempotent producer: no copy twice from its
own retries), a `sent` event with the messages' places. A rerun sends only what no `sent` event
names; after a `sending` without its `sent` (a crash mid-way), it first reads the dead-letter
topic from the ends that event recorded and counts the copies of the batch found there as sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from foodtaster.errors import Failed, NotFound
from foodtaster.logs import batch_logger
from foodtaster.registry import KafkaSource
from foodtaster.sources.kafka import CLIENT_LOG, SourceUnavailable, scrub
from foodtaster.sources.raw_batch import KafkaOffsets, Manifest
from foodtaster.state.events import EventLog
from foodtaster.state.lake import Lake, read_json

KIND = "dead_letters"  # _state/dead_letters/<dataset>/
HEADER = "__foodtaster.errors."
MAX_REASONS_BYTES = 16 * 1024  # the reasons header, cut to this many bytes of JSON
FLUSH_TIMEOUT_S = 60.0
# Consumer settings a connection may carry (the landing's); a producer has no use for them.
CONSUMER_ONLY = ("group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
                 "enable.partition.eof", "session.timeout.ms", "max.poll.interval.ms",
                 "partition.assignment.strategy", "isolation.level", "heartbeat.interval.ms",
                 "group.instance.id", "auto.commit.interval.ms", "fetch.min.bytes", "fetch.wait.max.ms")

PRODUCER_ONLY = ("enable.idempotence", "acks", "message.timeout.ms")
Place = tuple[int, int]  # (partition, offset) of a message in the source topic
Headers = list[tuple[str, str | bytes | None]]


class DeadLetterError(Failed):
    """A dead letter could not be produced (the others are remembered): the task is retried."""


@dataclass(frozen=True)
class DeadLetters:
    """What one call sent: how many of the batch's quarantined messages, how many were sent before."""

    dataset: str
    batch_id: str
    topic: str
    quarantined: int
    sent: int
    sent_before: int

    def as_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "batch_id": self.batch_id, "topic": self.topic,
                "quarantined": self.quarantined, "sent": self.sent, "sent_before": self.sent_before}


def quarantined(lake: Lake, dataset: str, batch_id: str) -> list[dict[str, Any]]:
    """The batch's quarantined rows (lineage and reasons): the one read of the quarantine here,
    through the lake's browse module, so that the quarantine's storage can change under it."""
    from foodtaster.state.browse import NotInLake, quarantined_rows

    try:
        return quarantined_rows(lake, dataset, batch_id)
    except NotInLake:
        return []


def place_of(row: Mapping[str, Any], topic: str) -> Place | None:
    """A quarantined row's place in `topic`, from its lineage (`kafka://<topic>/<partition>`, offset)."""
    prefix = f"kafka://{topic}/"
    source_file, offset = row.get("_source_file") or "", row.get("_line_number")
    if not source_file.startswith(prefix) or offset is None:
        return None
    return int(source_file[len(prefix):]), int(offset)


def send(source: KafkaSource, lake: Lake, dataset: str, batch_date: str, batch_id: str,
         connection: Mapping[str, Any]) -> DeadLetters:
    """Produce every quarantined message of the batch not produced before to the source's
    dead-letter topic; the batch's quarantine must be written (the validate step ran)."""
    topic = source.dead_letter_topic
    if topic is None:
        raise NotFound(f"dataset {dataset!r}: its kafka source names no dead_letter_topic")
    log = batch_logger(__name__, dataset, batch_id)
    summary = lake.summary(dataset, batch_id)
    try:
        counted = read_json(summary).get("quarantined", 0)
    except FileNotFoundError:
        raise NotFound(f"{dataset} batch {batch_id} has no summary at {summary}: validate it first") from None
    rows = quarantined(lake, dataset, batch_id)
    if len(rows) != counted:
        raise Failed(f"{dataset} batch {batch_id}: the summary counts {counted} quarantined messages, "
                     f"the quarantine holds {len(rows)}")
    by_place = {place: row for row in rows if (place := place_of(row, source.topic)) is not None}
    events = EventLog(lake, KIND, dataset)
    settings = producer_settings(connection)
    sent_before = set(_sent(events, batch_id, topic, settings))
    due = sorted(set(by_place) - sent_before)
    if due:
        records = _records(lake.raw(dataset, batch_date, batch_id), due, source.topic)
        events.append({"type": "sending", "batch_id": batch_id, "topic": topic,
                       "ends": {str(p): end for p, end in _ends(settings, topic).items()},
                       "messages": len(due)})
        delivered = _produce(settings, topic, [
            (record, headers(record, by_place[place], dataset, batch_id, batch_date))
            for place, record in zip(due, (records[place] for place in due), strict=True)], log)
        events.append({"type": "sent", "batch_id": batch_id, "topic": topic,
                       "places": [list(place) for place in sorted(delivered)]})
        if len(delivered) != len(due):
            raise DeadLetterError(f"{len(due) - len(delivered)} of {len(due)} dead letters of {dataset} "
                                  f"batch {batch_id} were not acknowledged by {topic!r}; a retry sends those")
    report = DeadLetters(dataset, batch_id, topic, quarantined=len(by_place), sent=len(due),
                         sent_before=len(sent_before & set(by_place)))
    log.event("dead_letters", topic=topic, quarantined=report.quarantined, sent=report.sent,
              sent_before=report.sent_before)
    return report


def producer_settings(connection: Mapping[str, Any]) -> dict[str, Any]:
    """An idempotent producer's settings from the connection's extra (security included)."""
    settings = {k: v for k, v in connection.items() if k not in CONSUMER_ONLY}
    settings.update({"enable.idempotence": True, "acks": "all"})
    settings.setdefault("message.timeout.ms", 30_000)
    settings.setdefault("logger", CLIENT_LOG)
    return settings


def headers(record: Mapping[str, Any], row: Mapping[str, Any], dataset: str, batch_id: str,
            batch_date: str) -> Headers:
    """The original record's headers, then the context of its quarantine."""
    reasons = list(row.get("reasons") or [])
    first = reasons[0] if reasons else {}
    text = json.dumps(reasons, default=str, ensure_ascii=False)
    while len(text.encode()) > MAX_REASONS_BYTES and len(reasons) > 1:
        reasons = reasons[: len(reasons) // 2]
        text = json.dumps([*reasons, {"more": len(row["reasons"]) - len(reasons)}], default=str,
                          ensure_ascii=False)
    context = {
        "topic": record["topic"], "partition": str(record["partition"]), "offset": str(record["offset"]),
        "dataset": dataset, "batch.id": batch_id, "batch.date": batch_date,
        "rule": first.get("rule") or "", "layer": first.get("layer") or "",
        "message": first.get("message") or "", "reasons": text,
    }
    original = [(h["key"], h["value"]) for h in record.get("headers") or ()]
    return [*original, *((HEADER + name, str(value).encode()) for name, value in context.items())]


def _records(raw_path: str, places: Iterable[Place], topic: str) -> dict[Place, dict[str, Any]]:
    """The landed records (exact value, key, headers) at `places`, from the raw partition."""
    import fsspec
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    manifest = Manifest.read(raw_path)
    if manifest is None or not isinstance(manifest.source, KafkaOffsets):
        raise NotFound(f"{raw_path} is no landed Kafka batch")
    wanted = set(places)
    offsets = sorted({offset for _, offset in wanted})
    found: dict[Place, dict[str, Any]] = {}
    for entry in manifest.files:
        fs, path = fsspec.core.url_to_fs(f"{raw_path}/{entry.name}")
        with fs.open(path, "rb") as handle:
            table = pq.read_table(handle)
        table = table.filter(pc.is_in(table.column("offset"), value_set=pa.array(offsets, pa.int64())))
        for record in table.to_pylist():
            place = (record["partition"], record["offset"])
            if place in wanted and record["topic"] == topic:
                found[place] = record
    missing = wanted - set(found)
    if missing:
        raise Failed(f"{raw_path}: the quarantined messages at {sorted(missing)[:5]} are not in its files")
    return found


def _sent(events: EventLog, batch_id: str, topic: str, settings: Mapping[str, Any]) -> set[Place]:
    """The batch's messages sent to `topic`: those `sent` events name, and, after a `sending`
    without its `sent`, the copies found in the topic from the ends that event recorded."""
    sent: set[Place] = set()
    open_ends: list[dict[str, int]] = []
    for event in events.events():
        if event.get("batch_id") != batch_id or event.get("topic") != topic:
            continue
        if event["type"] == "sent":
            sent.update((p, o) for p, o in event["places"])
            open_ends.clear()
        elif event["type"] == "sending":
            open_ends.append({k: int(v) for k, v in event["ends"].items()})
    if open_ends:
        start = {int(p): min(ends.get(p, 0) for ends in open_ends) for p in open_ends[0]}
        found = _copies_in_topic(settings, topic, start, events.dataset, batch_id)
        if found:
            events.append({"type": "sent", "batch_id": batch_id, "topic": topic, "found_in_topic": True,
                           "places": [list(place) for place in sorted(found)]})
        sent |= found
    return sent


def _ends(settings: Mapping[str, Any], topic: str) -> dict[int, int]:
    """The dead-letter topic's partitions and their high watermarks now."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient({k: v for k, v in _reader_settings(settings).items()
                             if k not in CONSUMER_ONLY})
        topics = admin.list_topics(topic, timeout=30).topics
        described = topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise SourceUnavailable(f"dead-letter topic {topic!r} cannot be written: "
                                    f"{described.error if described else 'it does not exist'}")
        consumer = Consumer(_reader_settings(settings))
        try:
            return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[1]
                    for p in sorted(described.partitions)}
        finally:
            consumer.close()
    except KafkaException as err:
        raise SourceUnavailable(f"dead-letter topic {topic!r}: {scrub(str(err), settings)}") from None


def _reader_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    reader = {k: v for k, v in settings.items() if k not in PRODUCER_ONLY}
    reader.update({"group.id": "foodtaster-dead-letter-check", "enable.auto.commit": False,
                   "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    return reader


def _copies_in_topic(settings: Mapping[str, Any], topic: str, start: Mapping[int, int],
                     dataset: str, batch_id: str) -> set[Place]:
    """The places of the batch's messages whose copies are in `topic` from `start` on."""
    import time

    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(_reader_settings(settings))
    found: set[Place] = set()
    try:
        consumer.assign([TopicPartition(topic, p, o) for p, o in start.items()])
        waiting = set(start)
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while waiting and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        waiting.discard(message.partition())
                    continue
                context = {str(k).removeprefix(HEADER): v.decode() if isinstance(v, bytes) else str(v)
                           for k, v in list(message.headers() or ()) if str(k).startswith(HEADER)}
                if (context.get("dataset"), context.get("batch.id")) == (dataset, batch_id):
                    found.add((int(context["partition"]), int(context["offset"])))
        if waiting:
            raise SourceUnavailable(f"dead-letter topic {topic!r} could not be read to its end to find "
                                    f"the copies a crashed run sent")
    finally:
        consumer.close()
    return found


def _produce(settings: Mapping[str, Any], topic: str,
             letters: list[tuple[dict[str, Any], Headers]], log: Any) -> set[Place]:
    """Produce each dead letter (its record's key and exact value, the headers given); the places
    of those the topic acknowledged."""
    from confluent_kafka import KafkaException, Producer

    try:
        producer = Producer(dict(settings))
    except KafkaException as err:
        raise DeadLetterError(f"dead-letter producer: {scrub(str(err), settings)}") from None
    delivered: set[Place] = set()
    failures: list[str] = []

    def report(place: Place):  # noqa: ANN202 - confluent-kafka's delivery callback
        def delivery(err: Any, _message: Any) -> None:
            if err is None:
                delivered.add(place)
            else:
                failures.append(scrub(str(err), settings))
        return delivery

    for record, context in letters:
        value = None if record.get("value_is_null") else record["payload"]
        place = (record["partition"], record["offset"])
        while True:
            try:
                producer.produce(topic, value=value, key=record.get("key"), headers=context,
                                 on_delivery=report(place))
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.5)
        producer.poll(0)
    producer.flush(FLUSH_TIMEOUT_S)
    if failures:
        log.warning("event=dead_letters_failed", fields={"topic": topic, "errors": failures[:3]})
    return delivered
