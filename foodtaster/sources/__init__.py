"""Where a batch comes from: one small interface, one implementation a kind of source.

A source lands the messages of one run's interval into the raw partition of a batch
(`raw/<dataset>/batch_date=<d>/batch_id=<id>/` with `_manifest.json` written last) and
remembers what it took in the system it reads from (a bookmark in the lake for the
inbox folder; the durable consumer's acknowledgements for a broker), so that any worker
can land any batch and no message is landed into two batches.

- `inbox`: producers' JSON-lines files under `inbox/<dataset>/dt=<date>/` (the default).
- `nats`: a NATS JetStream stream drained through a durable pull consumer.

A new kind (Kafka, say) is a config dataclass in `SOURCE_KINDS` and one module with a
`land_batch` that `land` calls; see the README's "Sources" section.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from foodtaster.state.lake import Lake

if TYPE_CHECKING:
    from foodtaster.registry import DatasetConfig
    from foodtaster.state.landing import LandingResult


class SourceConfigError(ValueError):
    """A dataset's `source` entry in pipeline.yaml is malformed."""


@dataclass(frozen=True)
class InboxSource:
    """Files dropped by producers in the lake's inbox folder."""

    kind: str = "inbox"


@dataclass(frozen=True)
class NatsSource:
    """A JetStream stream read through a durable pull consumer; its acks are the bookmark."""

    url: str
    stream: str
    subject: str  # the consumer's filter subject, e.g. `orders.>`
    durable: str  # the durable consumer's name: the read position lives in the broker
    max_messages: int = 1_000_000  # one batch takes at most this many messages
    max_bytes: int = 1024**3  # ... and at most this many payload bytes
    ack_wait_seconds: float = 300.0  # a delivered message not acked by then is redelivered
    connect_timeout_seconds: float = 5.0
    kind: str = "nats"


SourceConfig = InboxSource | NatsSource
SOURCE_KINDS: dict[str, type] = {"inbox": InboxSource, "nats": NatsSource}


def source_from_entry(dataset: str, entry: dict[str, Any] | None) -> SourceConfig:
    """Read a dataset's `source:` mapping (absent: the inbox folder)."""
    if not entry:
        return InboxSource()
    if not isinstance(entry, dict):
        raise SourceConfigError(f"dataset {dataset!r}: 'source' must be a mapping with a 'kind'")
    kind = entry.get("kind", "inbox")
    if kind not in SOURCE_KINDS:
        raise SourceConfigError(
            f"dataset {dataset!r}: source kind {kind!r} is not one of {sorted(SOURCE_KINDS)}"
        )
    cls = SOURCE_KINDS[kind]
    known = {f.name for f in fields(cls)}
    unknown = set(entry) - known
    if unknown:
        raise SourceConfigError(f"dataset {dataset!r}: unknown keys {sorted(unknown)} in its {kind} source")
    try:
        return cls(**entry)
    except TypeError as err:
        raise SourceConfigError(f"dataset {dataset!r}: {kind} source: {err}") from err


def land(config: DatasetConfig, lake: Lake, date: str, batch_id: str | None = None,
         hour: int | None = None) -> LandingResult:
    """Land one interval of a dataset from its source into a raw batch: the one entry point
    the pipeline calls, whatever the kind of source."""
    source = config.source
    if isinstance(source, NatsSource):
        from foodtaster.sources import nats

        return nats.land_batch(source, lake, config.name, date, batch_id=batch_id, hour=hour)
    from foodtaster.state import landing

    return landing.land_batch(lake, config.name, date, batch_id=batch_id, hour=hour,
                              limits=landing.Limits.of(config))
