"""Land a run's interval from a NATS JetStream stream, the read position kept in the broker.

The durable pull consumer is the bookmark store (state in the messaging system, stateless
workers): a message is acknowledged only after the raw partition holding it and the
partition's manifest are durably in the lake, so the consumer's acknowledgements never run
ahead of what was landed.

A batch takes the consumer's messages published before its interval ends, up to the
source's `max_messages` and `max_bytes`; what is left waits in the broker for the next run.
Each landing writes one Parquet file, `messages-<first seq>-<last seq>.parquet`, holding
every payload exactly as received (binary: a newline, invalid UTF-8 or nothing at all stays
as it is) with the broker's metadata; the manifest records the stream sequences landed.

A landing killed between writing and acknowledging leaves its messages pending in the
broker: they are redelivered to a later fetch, recognised by their stream sequence in the
manifests (the lake's record of what was landed) and acknowledged without being landed
again. A message the broker delivers twice in one fetch is landed once.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import fsspec

from foodtaster.errors import Failed
from foodtaster.landing import LandingResult
from foodtaster.logs import batch_logger
from foodtaster.registry import NatsSource
from foodtaster.sources.raw_batch import (
    MANIFEST,
    BrokerSource,
    LandedFile,
    Manifest,
    batch_id_for,
    landing_result,
)
from foodtaster.state.lake import Lake, check_batch_id, check_date, fault_point, read_json

FETCH_BATCH = 1000  # messages asked for in one pull request
FETCH_TIMEOUT_S = 1.0  # an empty pull waits this long before the stream counts as drained


class SourceUnavailable(Failed):
    """The broker cannot be reached: infrastructure, so the task fails and Airflow retries."""


def interval_end(date: str, hour: int | None) -> datetime:
    """Where a run's interval ends: the next day, or the next hour for an hourly run."""
    start = datetime.fromisoformat(check_date(date)).replace(tzinfo=UTC)
    if hour is None:
        return start + timedelta(days=1)
    return start + timedelta(hours=hour + 1)


class LandedSequences:
    """The stream sequences the lake holds for a dataset: the ranges in every raw manifest."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        self._ranges = sorted(ranges)
        self._starts = [first for first, _ in self._ranges]

    def __contains__(self, sequence: int) -> bool:
        i = bisect.bisect_right(self._starts, sequence) - 1
        return i >= 0 and self._ranges[i][0] <= sequence <= self._ranges[i][1]

    @classmethod
    def read(cls, lake: Lake, dataset: str, stream: str) -> LandedSequences:
        fs, raw = fsspec.core.url_to_fs(lake.zone("raw", dataset))
        ranges: list[tuple[int, int]] = []
        for path in fs.glob(f"{raw}/batch_date=*/batch_id=*/{MANIFEST}") if fs.exists(raw) else []:
            source = Manifest.from_dict(read_json(fs.unstrip_protocol(path))).source
            if isinstance(source, BrokerSource) and source.stream == stream:
                ranges.extend(source.sequence_ranges)
        return cls(ranges)


def sequence_ranges(sequences: Iterable[int], ranges: Iterable[Iterable[int]] = ()) -> list[list[int]]:
    """Sequences and ranges as the fewest ranges: [3, 4, 5, 9] -> [[3, 5], [9, 9]]."""
    spans = sorted([*(list(r) for r in ranges), *([s, s] for s in sequences)])
    merged: list[list[int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


@dataclass(frozen=True)
class StreamSource:
    """A NATS JetStream stream, drained through its durable pull consumer, as a
    `foodtaster.sources.Source`."""

    config: NatsSource

    def land_batch(self, lake: Lake, dataset: str, date: str, batch_id: str | None = None,
                   hour: int | None = None) -> LandingResult:
        return land_batch(self.config, lake, dataset, date, batch_id=batch_id, hour=hour)


def land_batch(
    source: NatsSource,
    lake: Lake,
    dataset: str,
    date: str,
    batch_id: str | None = None,
    hour: int | None = None,
    now: datetime | None = None,
) -> LandingResult:
    """Land the consumer's messages published before the interval's end into `batch_id`.

    A rerun of a batch keeps what it holds and adds what the broker has for it since.
    Raises SourceUnavailable when the broker cannot be reached; nothing is acknowledged then.
    """
    batch_id = check_batch_id(batch_id or batch_id_for(date, hour))
    raw_path = lake.raw(dataset, date, batch_id)
    previous = Manifest.read(raw_path)
    landed = LandedSequences.read(lake, dataset, source.stream)
    log = batch_logger(__name__, dataset, batch_id)
    end = interval_end(date, hour)

    async def drain() -> tuple[Manifest, list[dict[str, Any]], dict[str, int]]:
        import nats
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        async def report(error: Exception) -> None:
            log.warning("event=broker_error", fields={"url": source.url, "error": repr(error)})

        try:
            # nats-py retries a refused first connection without end: the wait is bounded here.
            client = await asyncio.wait_for(
                nats.connect(source.url, connect_timeout=source.connect_timeout_seconds,
                             allow_reconnect=False, max_reconnect_attempts=0, error_cb=report),
                timeout=2 * source.connect_timeout_seconds,
            )
        except Exception as err:  # noqa: BLE001 - any failure to connect is the broker's
            raise SourceUnavailable(f"NATS at {source.url} cannot be reached: {err!r}") from err
        try:
            js = client.jetstream()
            config = ConsumerConfig(
                durable_name=source.durable, filter_subject=source.subject,
                ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                ack_wait=source.ack_wait_seconds,
            )
            subscription = await js.pull_subscribe(
                source.subject, durable=source.durable, stream=source.stream, config=config
            )
            taken, redelivered, beyond = await _fetch(subscription, source, landed, end)
            messages = [_record(message) for message in taken]
            manifest = _write(lake, dataset, date, hour, batch_id, source, previous, messages, now)
            fault_point("nats.before_ack")  # a test kills the landing here
            for message in [*taken, *redelivered]:
                await message.ack()
            for message in beyond:
                await message.nak()
            await client.flush()
            return manifest, messages, {"redelivered": len(redelivered), "left_for_later": len(beyond)}
        finally:
            await client.close()

    manifest, messages, counts = asyncio.run(drain())
    result = landing_result(manifest, raw_path, lake.root)
    log.event(
        "landed", source="nats", stream=source.stream, new=len(messages), messages=result.messages,
        **counts, raw_path=raw_path,
    )
    return result


async def _fetch(subscription: Any, source: NatsSource, landed: LandedSequences,
                 end: datetime) -> tuple[list[Any], list[Any], list[Any]]:
    """Pull until the stream is drained, the interval ends or the batch is full.

    Returns the messages to land, those landed before (to acknowledge only) and those left
    for a later batch (to give back).
    """
    taken: list[Any] = []
    redelivered: list[Any] = []
    beyond: list[Any] = []
    seen: set[int] = set()
    size = 0
    while not beyond:
        try:
            batch = await subscription.fetch(FETCH_BATCH, timeout=FETCH_TIMEOUT_S)
        except TimeoutError:  # nats' own and asyncio's: the stream has nothing more now
            break
        for message in batch:
            sequence = message.metadata.sequence.stream
            if sequence in seen or sequence in landed:
                redelivered.append(message)
            elif beyond or message.metadata.timestamp >= end or len(taken) >= source.max_messages or (
                taken and size + len(message.data) > source.max_bytes
            ):
                beyond.append(message)
            else:
                taken.append(message)
                seen.add(sequence)
                size += len(message.data)
    return taken, redelivered, beyond


def _record(message: Any) -> dict[str, Any]:
    metadata = message.metadata
    return {
        "payload": bytes(message.data),
        "stream_sequence": metadata.sequence.stream,
        "subject": message.subject,
        "headers": json.dumps(message.headers, sort_keys=True) if message.headers else None,
        "published_at": metadata.timestamp,
        "deliveries": metadata.num_delivered,
    }


def _write(lake: Lake, dataset: str, date: str, hour: int | None, batch_id: str, source: NatsSource,
           previous: Manifest | None, messages: list[dict[str, Any]], now: datetime | None) -> Manifest:
    """The messages' Parquet file (hidden name, then moved), then the manifest: a partition
    without a manifest listing a file was never landed with it. Returns the batch's manifest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw_path = lake.raw(dataset, date, batch_id)
    files = list(previous.files) if previous else []
    before = previous.source if previous is not None and isinstance(previous.source, BrokerSource) else None
    ranges = [list(r) for r in before.sequence_ranges] if before else []
    if messages:
        sequences = [m["stream_sequence"] for m in messages]
        name = f"messages-{min(sequences)}-{max(sequences)}.parquet"
        table = pa.Table.from_pylist(messages, schema=_messages_schema())
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        data = buffer.getvalue()
        fs, folder = fsspec.core.url_to_fs(raw_path)
        fs.makedirs(folder, exist_ok=True)
        hidden = f"{folder}/.{name}.landing"
        with fs.open(hidden, "wb") as handle:
            handle.write(data)
        fs.mv(hidden, f"{folder}/{name}")
        files.append(LandedFile(
            name=name, source=f"nats://{source.stream}/{source.subject}", bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(), lines=len(messages),
        ))
        ranges = sequence_ranges(sequences, ranges)
    if previous is not None and not messages:
        return previous
    manifest = Manifest(
        dataset=dataset, batch_id=batch_id, batch_date=date, hour=hour, inbox=None,
        landed_at=(previous and previous.landed_at) or (now or datetime.now(UTC)).isoformat(),
        files=tuple(files),
        source=BrokerSource(kind="nats", url=source.url, stream=source.stream, subject=source.subject,
                            durable=source.durable, sequence_ranges=tuple((a, b) for a, b in ranges)),
    )
    manifest.write(raw_path)
    return manifest


def _messages_schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        ("payload", pa.binary()),
        ("stream_sequence", pa.int64()),
        ("subject", pa.string()),
        ("headers", pa.string()),
        ("published_at", pa.timestamp("us", tz="UTC")),
        ("deliveries", pa.int32()),
    ])
