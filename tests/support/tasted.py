"""One batch landed from the lake's inbox, run once through the whole job and read back: what the
job tests of a dataset assert on, taken before any other run touches the lake."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.state.lake import Lake
from foodtaster.state.tables import QUARANTINE, VALID
from support.frames import batch_frame


def inbox_lines(folder: Path) -> dict[tuple[str, int], bytes]:
    """Each line's exact bytes by (file name, 1-based line number), gzip files read through."""
    lines = {}
    for path in folder.iterdir():
        data = path.read_bytes()
        for n, line in enumerate((gzip.decompress(data) if path.suffix == ".gz" else data).splitlines(), 1):
            lines[(path.name, n)] = line
    return lines


def land_and_run(spark, lake: Lake, dataset: str, day: str, batch_id: str) -> dict[str, Any]:
    """The day's inbox landed as `batch_id` and run with publishing; the summary as JSON and the
    valid and quarantined rows as dicts."""
    from foodtaster.sources.inbox import land_batch

    landed = land_batch(lake, dataset, day, batch_id=batch_id)
    run = BatchRun(config=get_dataset(dataset), input_path=landed.raw_path, lake=lake, batch_id=batch_id,
                   batch_date=day, publish=True)
    summary = run_batch(spark, run).to_json()
    valid = batch_frame(spark, lake, dataset, VALID, batch_id)
    quarantine = batch_frame(spark, lake, dataset, QUARANTINE, batch_id)
    return {"lake": lake, "run": run, "summary": summary, "valid_schema": valid.schema,
            "valid": [r.asDict(recursive=True) for r in valid.collect()],
            "quarantine": [r.asDict(recursive=True) for r in quarantine.collect()]}
