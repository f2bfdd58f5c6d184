"""Upkeep of a dataset's tables: files nothing references, old snapshots and tags, small files.

`foodtaster tables maintain` runs these, a table at a time
(docs/decisions/027-iceberg-tables-write-audit-publish.md):

1. tags    each `batch-<id>` tag older than the dataset's `tag_retention_days` is removed;
2. expire  snapshots older than `snapshot_retention_days` that no branch or tag holds are
           expired (pyiceberg's `expire_snapshots`, which never expires a branch's or tag's head);
3. compact a batch on main whose files are more than one and together small is rewritten into
           one file (pyarrow), one snapshot that removes the old files and adds the new, under the
           batch's lease: every file still holds one batch;
4. orphans files under the table's location that no snapshot left references (a killed run's,
           a replaced rerun's once its snapshots expired, an expired snapshot's manifests), older
           than a grace period and of no batch a live run holds, are removed. A referenced file is
           never removed: the references are read after steps 1 to 3, from every snapshot, branch
           and tag the table keeps.

pyiceberg 0.12 removes no orphan file and rewrites no data file itself; both are done here with
its public scan, inspect and snapshot APIs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from foodtaster.logs import batch_logger
from foodtaster.state.lake import new_run_id
from foodtaster.state.lease import batch_lease, live_holder
from foodtaster.state.publish import commit_changes
from foodtaster.state.tables import MAIN, DatasetTables, batch_field_id, data_files, file_batch

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

TAG_PREFIX = "batch-"
SMALL_BATCH_BYTES = 128 * 1024 * 1024  # a batch whose files together are under it is one file's worth
DEFAULT_GRACE = timedelta(hours=24)  # longer than any run: a file younger than this may be one's
BATCH_IN_PATH = re.compile(r"/batch_id=([A-Za-z0-9][A-Za-z0-9_.-]{0,63})/")


@dataclass
class TableUpkeep:
    """What one pass did to one table (or, in a dry run, would do)."""

    table: str
    tags_removed: list[str] = field(default_factory=list)
    snapshots_expired: int = 0
    batches_compacted: dict[str, int] = field(default_factory=dict)  # batch -> files rewritten into one
    orphans_removed: list[str] = field(default_factory=list)
    kept_for_live_runs: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "tags_removed": self.tags_removed,
                "snapshots_expired": self.snapshots_expired, "batches_compacted": self.batches_compacted,
                "orphans_removed": len(self.orphans_removed), "kept_for_live_runs": self.kept_for_live_runs}


def maintain(tables: DatasetTables, zone: str, *, tag_retention: timedelta, snapshot_retention: timedelta,
             grace: timedelta = DEFAULT_GRACE, compact: bool = True, dry_run: bool = False,
             now: datetime | None = None) -> TableUpkeep:
    """Steps 1 to 4 on one table; `dry_run` changes nothing and says what it would."""
    now = now or datetime.now(UTC)
    done = TableUpkeep(tables.identifier(zone))
    table = tables.load(zone)
    if table is None:
        return done
    done.tags_removed = _remove_old_tags(table, now - tag_retention, dry_run)
    done.snapshots_expired = _expire(tables, zone, now - snapshot_retention, dry_run)
    if compact:
        done.batches_compacted = compact_small_batches(tables, zone, dry_run=dry_run)
    done.orphans_removed, done.kept_for_live_runs = remove_orphans(tables, zone, now - grace, dry_run)
    return done


def _remove_old_tags(table: Table, before: datetime, dry_run: bool) -> list[str]:
    from pyiceberg.table.refs import SnapshotRefType

    old = sorted(name for name, ref in table.metadata.refs.items()
                 if ref.snapshot_ref_type == SnapshotRefType.TAG and name.startswith(TAG_PREFIX)
                 and _taken_at(table, ref.snapshot_id) < before)
    if old and not dry_run:
        snapshots = table.manage_snapshots()
        for name in old:
            snapshots.remove_tag(name)
        snapshots.commit()
    return old


def _taken_at(table: Table, snapshot_id: int) -> datetime:
    snapshot = table.snapshot_by_id(snapshot_id)
    millis = snapshot.timestamp_ms if snapshot is not None else 0
    return datetime.fromtimestamp(millis / 1000, UTC)


def _expire(tables: DatasetTables, zone: str, before: datetime, dry_run: bool) -> int:
    table = tables.table(zone)
    held = {ref.snapshot_id for ref in table.metadata.refs.values()}
    old = [s for s in table.snapshots()
           if _taken_at(table, s.snapshot_id) < before and s.snapshot_id not in held]
    if old and not dry_run:
        table.maintenance.expire_snapshots().older_than(before).commit()
    return len(old)


# ------------------------------------------------------------------------------- compaction

def compact_small_batches(tables: DatasetTables, zone: str, *, small_bytes: int = SMALL_BATCH_BYTES,
                          dry_run: bool = False) -> dict[str, int]:
    """Each batch on main held in several files that together are under `small_bytes`, rewritten
    into one; returns {batch: files it was in}."""
    table = tables.table(zone)
    main = table.current_snapshot()
    if main is None:
        return {}
    by_batch: dict[str, list[DataFile]] = {}
    field_id = batch_field_id(table)
    for data_file in data_files(table, main.snapshot_id):
        by_batch.setdefault(file_batch(data_file, field_id), []).append(data_file)
    done = {}
    for batch_id, files in sorted(by_batch.items()):
        if len(files) < 2 or sum(f.file_size_in_bytes for f in files) >= small_bytes:
            continue
        done[batch_id] = len(files)
        if not dry_run:
            _compact(tables, zone, batch_id)
    return done


def _compact(tables: DatasetTables, zone: str, batch_id: str) -> None:
    """One batch's files on main rewritten into one, under the batch's lease (read again there:
    a run may have replaced them since they were listed)."""
    run_id = f"compact-{new_run_id()}"
    with batch_lease(tables.lake, tables.dataset, batch_id, run_id):
        table = tables.table(zone)
        main = table.current_snapshot()
        if main is None:
            return
        field_id = batch_field_id(table)
        files = [f for f in data_files(table, main.snapshot_id) if file_batch(f, field_id) == batch_id]
        if len(files) < 2:
            return
        rows = pa.concat_tables([_read(table, f) for f in files], promote_options="permissive")
        day = str(rows.column("batch_date")[0].as_py())
        path = f"{tables.run_folder(zone, table, day, batch_id, run_id)}/part-compacted.parquet"
        with table.io.new_output(path).create(overwrite=True) as stream:
            pq.write_table(rows, stream, compression="snappy", coerce_timestamps="us")
        commit_changes(tables, zone, MAIN, batch_id, add=[path], remove=[f.file_path for f in files],
                       run_id=run_id, operation="compact")
    batch_logger(__name__, tables.dataset, batch_id).event(
        "compacted", table=tables.identifier(zone), files=len(files), rows=rows.num_rows)


def _read(table: Table, data_file: DataFile) -> pa.Table:
    with table.io.new_input(data_file.file_path).open() as stream:
        return pq.read_table(stream)


# ---------------------------------------------------------------------------------- orphans

def referenced_files(table: Table) -> set[str]:
    """Every file the table's metadata reaches: the data files of every snapshot it keeps (so of
    every branch and tag), their manifests and manifest lists, and its metadata files."""
    table.refresh()
    found = set(table.inspect.all_files().column("file_path").to_pylist())
    found |= set(table.inspect.all_manifests().column("path").to_pylist())
    found |= {s.manifest_list for s in table.snapshots()}
    found |= {entry.metadata_file for entry in table.metadata.metadata_log}
    found.add(table.metadata_location)
    return {_normal(p) for p in found}


def remove_orphans(tables: DatasetTables, zone: str, before: datetime, dry_run: bool = False
                   ) -> tuple[list[str], int]:
    """Remove the files under the table's location that nothing references, last changed before
    `before`, and of no batch a live run holds; returns them and how many were kept for live runs.
    A checksum file Hadoop writes beside a data file (`.<name>.crc`) goes with its data file."""
    table = tables.table(zone)
    keep = referenced_files(table)
    fs, root = fsspec.core.url_to_fs(table.location())
    removed, live = [], 0
    holders: dict[str, bool] = {}
    for path, info in _files_under(fs, root):
        uri = _normal(fs.unstrip_protocol(path))
        if uri in keep or _sidecar_of(uri) in keep or _changed(info) >= before:
            continue
        found = BATCH_IN_PATH.search(path)
        if found:
            batch_id = found.group(1)
            if batch_id not in holders:
                holders[batch_id] = live_holder(tables.lake, tables.dataset, batch_id) is not None
            if holders[batch_id]:
                live += 1
                continue
        removed.append(uri)
        if not dry_run:
            fs.rm_file(path)
    return removed, live


def _files_under(fs: fsspec.AbstractFileSystem, root: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not fs.exists(root):
        return
    for path, info in fs.find(root, detail=True).items():
        if info.get("type") == "file":
            yield path, info


def _changed(info: dict[str, Any]) -> datetime:
    moment = info.get("mtime") or info.get("LastModified") or info.get("updated") or info.get("created")
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if isinstance(moment, int | float):
        return datetime.fromtimestamp(moment, UTC)
    return datetime.now(UTC)  # unknown: young, so kept


def _sidecar_of(uri: str) -> str | None:
    folder, _, name = uri.rpartition("/")
    if name.startswith(".") and name.endswith(".crc"):
        return f"{folder}/{name[1:-len('.crc')]}"
    return None


def _normal(uri: str) -> str:
    """One spelling of a local file's URI (`file:/x`, `file:///x` and `/x` are one file)."""
    if uri.startswith("file:"):
        uri = "/" + uri[len("file:"):].lstrip("/")
    return uri
