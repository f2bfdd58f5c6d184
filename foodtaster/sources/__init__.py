"""Where a batch comes from: one small interface, one implementation a kind of source.

A source lands the messages of one run's interval into the raw partition of a batch
(`raw/<dataset>/batch_date=<d>/batch_id=<id>/` with `_manifest.json` written last) and
remembers what it took in the system it reads from (a bookmark in the lake for the
inbox folder; the durable consumer's acknowledgements for a broker), so that any worker
can land any batch and no message is landed into two batches.

- `inbox`: producers' JSON-lines files under `inbox/<dataset>/dt=<date>/` (the default).
- `nats`: a NATS JetStream stream drained through a durable pull consumer.

What both share, the batch id, the manifest and the landing's result, is in `raw_batch`;
the inbox's line scanner in `lines`. A source's config (`source:` in pipeline.yaml) is
parsed by the registry. A new kind (Kafka, say) is a config dataclass in
`foodtaster.registry.SOURCE_KINDS` and one module here with a `land_batch` that `land`
calls; see the README's "Sources" section.
"""

from __future__ import annotations

from foodtaster.landing import LandingResult
from foodtaster.registry import DatasetConfig, NatsSource
from foodtaster.sources import inbox, nats
from foodtaster.state.lake import Lake


def land(config: DatasetConfig, lake: Lake, date: str, batch_id: str | None = None,
         hour: int | None = None) -> LandingResult:
    """Land one interval of a dataset from its source into a raw batch: the one entry point
    the pipeline calls, whatever the kind of source."""
    source = config.source
    if isinstance(source, NatsSource):
        return nats.land_batch(source, lake, config.name, date, batch_id=batch_id, hour=hour)
    return inbox.land_batch(lake, config.name, date, batch_id=batch_id, hour=hour,
                            limits=inbox.Limits.of(config))
