"""Where a batch comes from: one small interface, one implementation a kind of source.

A source lands the messages of one run's interval into the raw partition of a batch
(`raw/<dataset>/batch_date=<d>/batch_id=<id>/` with `_manifest.json` written last) and
remembers what it took in the system it reads from (a bookmark in the lake for the
inbox folder; the durable consumer's acknowledgements for a broker), so that any worker
can land any batch and no message is landed into two batches.

- `inbox`: producers' JSON-lines files under `inbox/<dataset>/dt=<date>/` (the default).
- `nats`: a NATS JetStream stream drained through a durable pull consumer.
- `kafka`: a Kafka topic read by the land task's own consumer group, committed after landing.

Each is a `Source` (`InboxSource`, `StreamSource`, `TopicSource`); `source_of` picks the dataset's. What
both share, the batch id, the manifest and the landing's result, is in `raw_batch`; the
inbox's line scanner in `lines`. A source's config (`source:` in pipeline.yaml) is parsed by
the registry; a broker's client settings (its connection, security included) are handed in by
the caller (the land task reads them from an Airflow connection). A new kind is a config dataclass in
`foodtaster.registry.SOURCE_KINDS` and one module here with a `Source` that `source_of`
returns; see the README's "Sources" section. A hand run's folder of files
(`land_hand_run`) lands as the inbox lands its files, whatever the dataset's source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from foodtaster.landing import LandingResult
from foodtaster.registry import DatasetConfig, KafkaSource, NatsSource
from foodtaster.sources.inbox import InboxSource
from foodtaster.sources.kafka import TopicSource
from foodtaster.sources.lines import Limits
from foodtaster.sources.nats import StreamSource
from foodtaster.sources.raw_batch import Manifest
from foodtaster.state.lake import Lake


class Source(Protocol):
    """Where a dataset's batches come from: it lands one run's interval into a raw batch."""

    def land_batch(self, lake: Lake, dataset: str, date: str, batch_id: str | None = None,
                   hour: int | None = None) -> LandingResult:
        """Land the interval's new messages into `batch_id` (by default the interval's own),
        or, for a batch landed before, what it holds and what came for it since."""
        ...


def source_of(config: DatasetConfig, connection: Mapping[str, Any] | None = None) -> Source:
    """The dataset's source, as pipeline.yaml names it (the inbox unless it names another);
    `connection` is a Kafka source's client settings (its Airflow connection's extra)."""
    if isinstance(config.source, NatsSource):
        return StreamSource(config.source)
    if isinstance(config.source, KafkaSource):
        return TopicSource(config.source, dict(connection or {}))
    return InboxSource(Limits.of(config))


def land(config: DatasetConfig, lake: Lake, date: str, batch_id: str | None = None,
         hour: int | None = None, connection: Mapping[str, Any] | None = None) -> LandingResult:
    """Land one interval of a dataset from its source into a raw batch: the one entry point
    the pipeline calls, whatever the kind of source."""
    return source_of(config, connection).land_batch(lake, config.name, date, batch_id=batch_id, hour=hour)


def land_hand_run(lake: Lake, config: DatasetConfig, input_path: str, batch_id: str,
                  batch_date: str) -> str:
    """The raw batch a hand run reads for `input_path`: itself when a landing wrote its manifest,
    else (a file or a folder) a landed copy under the lake's raw zone
    (`raw/<dataset>/_runs/batch_date=<d>/batch_id=<id>/hand-run`, replaced by the next hand
    run of the batch), landed under the dataset's `Limits` as the land task lands: a gzip
    bomb is `file.too_large`, a line too long to read `line.too_large`, and nothing in a
    file can make the job hold more than those limits."""
    if Manifest.read(input_path) is not None:
        return input_path
    landed = lake.runs("raw", config.name, batch_date, batch_id) + "/hand-run"
    InboxSource(Limits.of(config)).land_folder(input_path, landed, config.name, batch_id, batch_date)
    return landed
