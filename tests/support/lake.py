"""A small lake written the way the job writes it, with pyarrow and no Spark (for state and CLI tests)."""

from __future__ import annotations

import gzip
import json
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from foodtaster.state.groups import Poison
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch

REASON = pa.struct([(name, pa.string()) for name in ("layer", "rule", "column", "message", "value")])
LINEAGE = [("_batch_id", pa.string()), ("_source_file", pa.string()), ("_line_number", pa.int64()),
           ("_ingested_at", pa.timestamp("us", tz="UTC"))]


def reason(rule: str, message: str, layer: str = "contract", column: str | None = None,
           value: str | None = None) -> dict:
    return {"layer": layer, "rule": rule, "column": column, "message": message, "value": value}


def write_batch(root: Path, batch_date: str, batch_id: str, lines: list[bytes],
                quarantined: dict[int, list[dict]], dataset: str = "orders",
                file_name: str = "part-0.jsonl", verdict: str = "published") -> dict:
    """Land `lines` as one file (gzip when the name ends in .gz) and write the partitions:
    line numbers in `quarantined` (1-based) go to quarantine with their reasons, the rest
    to valid; the ledger records the counts (nothing lost: messages = valid + quarantined)."""
    lake = Lake(str(root))
    raw = Path(lake.raw(dataset, batch_date, batch_id))
    raw.mkdir(parents=True)
    body = b"".join(line + b"\n" for line in lines)
    (raw / file_name).write_bytes(gzip.compress(body) if file_name.endswith(".gz") else body)
    (raw / "_manifest.json").write_text(json.dumps({
        "dataset": dataset, "batch_id": batch_id, "batch_date": batch_date,
        "files": [{"name": file_name, "lines": len(lines)}], "unreadable": [],
    }))
    source = "file:" + urllib.parse.quote(str(raw / file_name))  # as Spark names it: file:/..., %20
    ingested = pa.scalar(0, pa.timestamp("us", tz="UTC"))

    def lineage(numbers):
        return {"_batch_id": [batch_id] * len(numbers), "_source_file": [source] * len(numbers),
                "_line_number": numbers, "_ingested_at": [ingested.as_py()] * len(numbers)}

    bad = sorted(quarantined)
    good = [n for n in range(1, len(lines) + 1) if n not in quarantined]
    quarantine = Path(lake.quarantine(dataset, batch_date, batch_id))
    quarantine.mkdir(parents=True)
    schema = pa.schema([("_raw", pa.binary()), ("reasons", pa.list_(REASON)), ("message_id", pa.string()),
                        *LINEAGE])
    pq.write_table(pa.table({"_raw": [lines[n - 1] for n in bad], "reasons": [quarantined[n] for n in bad],
                             "message_id": [None] * len(bad), **lineage(bad)}, schema=schema),
                   quarantine / "part-00000.snappy.parquet")
    (quarantine / "_SUCCESS").write_text("")
    valid = Path(lake.valid(dataset, batch_date, batch_id))
    valid.mkdir(parents=True)
    pq.write_table(pa.table({"message_id": [f"m{n}" for n in good], **lineage(good)},
                            schema=pa.schema([("message_id", pa.string()), *LINEAGE])),
                   valid / "part-00000.snappy.parquet")
    entry = {"batch_id": batch_id, "batch_date": batch_date, "messages": len(lines), "valid": len(good),
             "quarantined": len(bad), "duplicates_dropped": 0,
             "quarantine_rate": round(len(bad) / len(lines), 6), "verdict": verdict,
             "severity": "ok", "why": [], "timings": {}}
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]
    record_batch(lake, dataset, entry)
    return entry


def poison(lineage: str, group: str, order: str | None = "2026-11-20T09:00:00.000000Z",
           batch: str = "b1") -> Poison:
    """A poison message of the groups log: its lineage, its group, its order value, its batch."""
    return Poison(lineage, group, order, f"m-{lineage}", batch)
