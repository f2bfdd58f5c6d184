"""A small lake written the way the job writes it, with pyarrow and no Spark (for state and CLI tests):
the raw copy in `raw/`, the rows committed to the dataset's Iceberg tables (the quarantine on main,
valid rows on the batch's audit branch, then published unless held), the ledger."""

from __future__ import annotations

import gzip
import json
import urllib.parse
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from foodtaster.state.groups import Poison
from foodtaster.state.lake import Lake
from foodtaster.state.ledger import record_batch
from foodtaster.state.publish import commit_quarantine, publish_staged, stage_valid
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables

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
    schema = pa.schema([("_raw", pa.binary()), ("reasons", pa.list_(REASON)), ("message_id", pa.string()),
                        *LINEAGE])
    commit_rows(lake, dataset, QUARANTINE, batch_date, batch_id,
                pa.table({"_raw": [lines[n - 1] for n in bad], "reasons": [quarantined[n] for n in bad],
                          "message_id": [None] * len(bad), **lineage(bad)}, schema=schema))
    commit_rows(lake, dataset, VALID, batch_date, batch_id,
                pa.table({"message_id": [f"m{n}" for n in good], **lineage(good)},
                         schema=pa.schema([("message_id", pa.string()), *LINEAGE])),
                publish=verdict == "published")
    entry = {"batch_id": batch_id, "batch_date": batch_date, "messages": len(lines), "valid": len(good),
             "quarantined": len(bad), "duplicates_dropped": 0,
             "quarantine_rate": round(len(bad) / len(lines), 6), "verdict": verdict,
             "severity": "ok", "why": [], "timings": {}}
    assert entry["messages"] == entry["valid"] + entry["quarantined"] + entry["duplicates_dropped"]
    record_batch(lake, dataset, entry)
    return entry


def commit_rows(lake: Lake, dataset: str, zone: str, batch_date: str, batch_id: str, rows: pa.Table, *,
                publish: bool = True, run_id: str = "r1", required: list[tuple[str, ...]] | None = None
                ) -> str:
    """Commit `rows` as a batch of the dataset's `zone` table the way the job does: a Parquet file in
    the run's folder (with `batch_date` and `batch_id`), the quarantine on main, valid rows on the
    batch's audit branch, then published (`publish`); returns the file. A batch of no rows commits
    nothing but its (empty) snapshot."""
    tables = DatasetTables(lake, dataset)
    dated = rows.append_column("batch_date", pa.array([date.fromisoformat(batch_date)] * rows.num_rows,
                                                      pa.date32())).append_column(
        "batch_id", pa.array([batch_id] * rows.num_rows, pa.string()))
    table = tables.ensure(zone, dated.schema, required or [])
    path = f"{tables.run_folder(zone, table, batch_date, batch_id, run_id)}/part-00000.parquet"
    files = []
    if dated.num_rows:
        with table.io.new_output(path).create(overwrite=True) as stream:
            pq.write_table(dated, stream)
        files.append(path)
    if zone == QUARANTINE:
        commit_quarantine(tables, batch_id, files, run_id)
    else:
        stage_valid(tables, batch_id, files, run_id)
        if publish:
            publish_staged(tables, batch_id, run_id)
    return path


def use_catalog_of(lake: Lake, monkeypatch) -> None:
    """Configure the catalog `foodtaster` as pyiceberg users do (`PYICEBERG_CATALOG__...`): the one
    embedded in `lake`, for a lake whose folders are elsewhere (an object store through fsspec)."""
    from foodtaster.state.catalog import embedded_catalog_properties

    for key, value in embedded_catalog_properties(lake).items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__FOODTASTER__{key.upper()}", value)


def poison(lineage: str, group: str, order: str | None = "2026-11-20T09:00:00.000000Z",
           batch: str = "b1") -> Poison:
    """A poison message of the groups log: its lineage, its group, its order value, its batch."""
    return Poison(lineage, group, order, f"m-{lineage}", batch)


def batch_rows(lake: Lake, dataset: str, zone: str, batch_id: str, ref: str = "main") -> pa.Table | None:
    """A batch's rows in a table as a reader of `ref` (main, or an audit branch `audit-<batch>`)
    sees them, without the tables' own `batch_date` and `batch_id`; None when `ref` holds no row of
    it (not published, or not staged)."""
    tables = DatasetTables(lake, dataset)
    table = tables.load(zone)
    if table is None or table.snapshot_by_name(ref) is None or tables.batch(zone, batch_id, ref) is None:
        return None
    return tables.read(zone, batch_id, ref=ref).drop_columns(["batch_date", "batch_id"])


def row_count(lake: Lake, dataset: str, zone: str, batch_id: str, ref: str = "main") -> int:
    """How many rows of a batch `ref` of the table holds (0: none, or no such batch)."""
    found = DatasetTables(lake, dataset).batch(zone, batch_id, ref)
    return found.rows if found is not None else 0


def copy_lake(lake: Lake, target: Path) -> Lake:
    """A copy of a lake whose tables are the copy's own. Iceberg keeps absolute paths, so a copied
    catalog would still name the first lake's files: the folders are copied, and each table is made
    again in the copy's embedded catalog from the copied files, a snapshot a batch on main and on
    each audit branch (its run kept, so a held batch can still be released). History is not kept."""
    import shutil

    from foodtaster.state.catalog import catalog
    from foodtaster.state.publish import RUN_PROPERTY, commit_files, said
    from foodtaster.state.tables import AUDIT_PREFIX, MAIN, REQUIRED_FIELDS

    shutil.copytree(lake.root, target, ignore=shutil.ignore_patterns("_catalog", "warehouse"))
    copy = Lake(str(target))
    source_catalog = catalog(lake)
    for namespace in source_catalog.list_namespaces():
        for identifier in source_catalog.list_tables(namespace):
            source = source_catalog.load_table(identifier)
            dataset, zone = source.properties["foodtaster.dataset"], source.properties["foodtaster.zone"]
            old, new = DatasetTables(lake, dataset), DatasetTables(copy, dataset)
            required = [tuple(keys) for keys in json.loads(source.properties.get(REQUIRED_FIELDS, "[]"))]
            table = new.ensure(zone, source.schema().as_arrow(), required)
            for batch in old.batches(zone, MAIN, source):
                files = [_copy_file(f, source.location(), table.location()) for f in batch.files]
                commit_files(new, zone, MAIN, batch.batch_id, files, "copied", "copy")
            for ref in sorted(r for r in source.metadata.refs if r.startswith(AUDIT_PREFIX)):
                batch_id = ref[len(AUDIT_PREFIX):]
                staged = old.batch(zone, batch_id, ref, source)
                files = [_copy_file(f, source.location(), table.location())
                         for f in (staged.files if staged else ())]
                run_id = said(source.snapshot_by_name(ref), RUN_PROPERTY) or "copied"
                stage_valid(new, batch_id, files, run_id)
    return copy


def _copy_file(path: str, old_root: str, new_root: str) -> str:
    import shutil

    moved = new_root.rstrip("/") + path[len(old_root.rstrip("/")):]
    Path(moved.removeprefix("file://")).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path.removeprefix("file://"), moved.removeprefix("file://"))
    return moved
