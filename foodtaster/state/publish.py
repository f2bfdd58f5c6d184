"""Write-audit-publish: a batch's rows committed to a branch of their own, judged there, and
published by a guarded move of main (docs/decisions/027-iceberg-tables-write-audit-publish.md).

1. write    Spark writes the batch's files into its run's folder (`DatasetTables.run_folder`).
2. audit    `stage_valid`: the branch `audit-<batch>` made afresh off main's head, and one
            overwrite snapshot on it: the batch's earlier files out, this run's in. The gate
            judges what the branch holds; readers of main never see it.
3. publish  `publish_staged`: main moved to the branch's head, required to still be the snapshot
            read (a compare-and-swap in the catalog), when the branch is a fast-forward of it.
            When another batch moved main meanwhile, the batch is rebased on main's new head
            with the same files, checked again, and the move tried again. The same commit tags
            the published snapshot `batch-<batch>` and removes the branch.

The quarantine is committed straight to main of its table (`commit_quarantine`), one overwrite
snapshot a run, whatever the verdict. Every snapshot Foodtaster makes carries the batch and the
run (`foodtaster.batch-id`, `foodtaster.run-id`), so a publish knows which run a branch holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from foodtaster.errors import Failed, UsageError
from foodtaster.logs import batch_logger
from foodtaster.state.lake import Lake, fault_point, read_json, run_id_from, write_json
from foodtaster.state.lease import batch_lease
from foodtaster.state.tables import (
    MAIN,
    QUARANTINE,
    VALID,
    DatasetTables,
    TableError,
    audit_branch,
    batch_field_id,
    batch_tag,
    data_files,
    file_batch,
    retried,
)
from foodtaster.summary import BatchSummary

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

BATCH_PROPERTY, RUN_PROPERTY = "foodtaster.batch-id", "foodtaster.run-id"
OPERATION_PROPERTY = "foodtaster.operation"
REBASED_PROPERTY = "foodtaster.rebased-from"
PUBLISH_ATTEMPTS = 20


class UnjudgedRunError(Failed):
    """The rows staged now are not the run the gate judged: another run staged its own since."""


class NothingStaged(UsageError):
    """No audit branch for the batch: never staged, published already, or dropped."""


@dataclass(frozen=True)
class Committed:
    """One snapshot that replaced a batch's rows on a branch: what it holds of the batch."""

    snapshot_id: int
    files: tuple[str, ...]
    rows: int
    removed_rows: int


@dataclass(frozen=True)
class Published:
    snapshot_id: int
    tag: str
    rebased: int  # how many times main had moved and the batch was rebased on it


# ------------------------------------------------------------------------------- commits

def commit_files(tables: DatasetTables, zone: str, branch: str, batch_id: str, paths: Sequence[str],
                 run_id: str, operation: str) -> Committed:
    """One overwrite snapshot on `branch`: the batch's files there out, the Parquet files at
    `paths` in (no data read: their footers). Checked against the snapshot's summary."""
    from pyiceberg.io.pyarrow import parquet_files_to_data_files

    table = tables.table(zone)
    new = list(parquet_files_to_data_files(table.io, table.metadata, iter(paths)))
    for data_file in new:  # each file holds this batch alone
        if (found := file_batch(data_file, batch_field_id(table))) != batch_id:
            raise TableError(f"{data_file.file_path} holds batch {found!r}, not {batch_id!r}")
    properties = _properties(batch_id, run_id, operation)
    return _replace(lambda: tables.table(zone), branch, batch_id, new, properties)


def commit_changes(tables: DatasetTables, zone: str, branch: str, batch_id: str, *, add: Sequence[str],
                   remove: Sequence[str], run_id: str, operation: str) -> Committed:
    """One snapshot on `branch` that adds the files at `add` to the batch and removes its files at
    `remove` (a recall, a compaction): every other file of the batch is kept."""
    from pyiceberg.io.pyarrow import parquet_files_to_data_files

    table = tables.table(zone)
    gone = set(remove)

    def named(current: Table, head: Snapshot) -> list[DataFile]:
        old = [f for f in data_files(current, head.snapshot_id) if f.file_path in gone]
        if len(old) != len(gone):
            missing = sorted(gone - {f.file_path for f in old})
            raise TableError(f"{current.name()}: {missing} are not on {branch}")
        return old

    new = list(parquet_files_to_data_files(table.io, table.metadata, iter(add)))
    return _commit(lambda: tables.table(zone), branch, named, new, _properties(batch_id, run_id, operation))


def _replace(load: Callable[[], Table], branch: str, batch_id: str, new: list[DataFile],
             properties: dict[str, str]) -> Committed:
    def of_the_batch(table: Table, head: Snapshot) -> list[DataFile]:
        field_id = batch_field_id(table)
        return [f for f in data_files(table, head.snapshot_id) if file_batch(f, field_id) == batch_id]

    return _commit(load, branch, of_the_batch, new, properties)


def _commit(load: Callable[[], Table], branch: str, pick: Callable[[Table, Snapshot], list[DataFile]],
            new: list[DataFile], properties: dict[str, str]) -> Committed:
    """One overwrite snapshot on `branch`: the files `pick` names on its head out, `new` in; made
    again from a fresh read when another writer committed first (`retried`: pyiceberg's own
    retry is off, `foodtaster.state.tables`)."""

    def attempt(table: Table) -> list[DataFile]:
        head = table.snapshot_by_name(branch)
        if head is None:
            raise TableError(f"{table.name()}: no branch {branch!r} to commit to")
        old = pick(table, head)
        with table.transaction() as tx, tx.update_snapshot(branch=branch, snapshot_properties=properties
                                                           ).overwrite() as overwrite:
            for data_file in old:
                overwrite.delete_data_file(data_file)
            for data_file in new:
                overwrite.append_data_file(data_file)
        return old

    table = load()
    old = retried(load, attempt, f"{table.name()} branch {branch}")
    table = load()
    snapshot = _ours(table, branch, properties)
    added, removed = sum(f.record_count for f in new), sum(f.record_count for f in old)
    counted = (int(said(snapshot, "added-records") or 0), int(said(snapshot, "deleted-records") or 0))
    if counted != (added, removed):
        raise TableError(f"{table.name()} snapshot {snapshot.snapshot_id} on {branch}: its summary says "
                         f"{counted[0]} rows added and {counted[1]} removed, the files {added} and {removed}")
    return Committed(snapshot.snapshot_id, tuple(sorted(f.file_path for f in new)), added, removed)


def _ours(table: Table, branch: str, properties: dict[str, str]) -> Snapshot:
    """The newest snapshot on `branch` with these properties: the one just committed, though
    another batch's commit may have landed on top of it since (main of the quarantine)."""
    head = table.snapshot_by_name(branch)
    for snapshot in _ancestors(table, head) if head is not None else ():
        if all(said(snapshot, key) == value for key, value in properties.items()):
            return snapshot
    raise TableError(f"{table.name()}: the snapshot just committed to {branch} is not on it")


def said(snapshot: Snapshot, key: str) -> str | None:
    """A property of a snapshot's summary (`foodtaster.run-id`, `added-records`), None if absent."""
    return None if snapshot.summary is None else snapshot.summary.get(key)


def _properties(batch_id: str, run_id: str, operation: str) -> dict[str, str]:
    return {BATCH_PROPERTY: batch_id, RUN_PROPERTY: run_id, OPERATION_PROPERTY: operation}


def stage_valid(tables: DatasetTables, batch_id: str, paths: Sequence[str], run_id: str,
                operation: str = "batch") -> Committed:
    """Step 2: the batch's valid files on its audit branch, made afresh off main's head."""
    branch = audit_branch(batch_id)
    retried(lambda: tables.table(VALID), lambda table: _branch_off(table, branch, _main(table)),
            f"{tables.identifier(VALID)} branch {branch}")
    return commit_files(tables, VALID, branch, batch_id, paths, run_id, operation)


def _branch_off(table: Table, branch: str, head: Snapshot) -> None:
    """The branch made (again) at `head`, in one commit."""
    snapshots = table.manage_snapshots()
    if branch in table.metadata.refs:
        snapshots.remove_branch(branch)
    snapshots.create_branch(head.snapshot_id, branch)
    snapshots.commit()


def commit_quarantine(tables: DatasetTables, batch_id: str, paths: Sequence[str], run_id: str,
                      operation: str = "batch") -> Committed:
    """The batch's quarantine on main of its table, replacing its earlier run's rows."""
    return commit_files(tables, QUARANTINE, MAIN, batch_id, paths, run_id, operation)


def drop_staged(tables: DatasetTables, batch_id: str) -> bool:
    """Remove a held batch's audit branch (a supersede replaced its delivery); False when none."""
    branch = audit_branch(batch_id)

    def drop(table: Table | None) -> bool:
        if table is None or branch not in table.metadata.refs:
            return False
        snapshots = table.manage_snapshots()
        snapshots.remove_branch(branch)
        snapshots.commit()
        return True

    return retried(lambda: tables.load(VALID), drop, f"{tables.identifier(VALID)} branch {branch}")


def _main(table: Table) -> Snapshot:
    main = table.current_snapshot()
    if main is None:
        raise TableError(f"{table.name()} has no snapshot on main")
    return main


# ------------------------------------------------------------------------------- publish

def publish_staged(tables: DatasetTables, batch_id: str, run_id: str | None = None) -> Published:
    """Step 3: move main to the batch's audit branch (rebased on main when main moved), tag it,
    remove the branch; all in one guarded commit. `run_id`: the run the gate judged, which the
    branch must hold (`UnjudgedRunError` otherwise). Published already by that run: its tag."""
    from pyiceberg.exceptions import CommitFailedException

    branch, tag = audit_branch(batch_id), batch_tag(batch_id)
    log = batch_logger(__name__, tables.dataset, batch_id)
    rebased = 0
    for _ in range(PUBLISH_ATTEMPTS):
        table = tables.table(VALID)
        head = table.snapshot_by_name(branch)
        if head is None:
            return _published_already(table, batch_id, run_id, rebased)
        _check_judged(table, head, batch_id, run_id)
        main = _main(table)
        if head.parent_snapshot_id != main.snapshot_id:
            try:
                _rebase(table, branch, batch_id, head, main)
            except CommitFailedException:  # another writer committed first: read main again
                continue
            rebased += 1
            log.event("rebased", table=tables.identifier(VALID), on=main.snapshot_id)
            continue
        fault_point("publishing")
        snapshots = table.manage_snapshots()
        snapshots.set_current_snapshot(snapshot_id=head.snapshot_id)
        snapshots.create_tag(head.snapshot_id, tag)
        snapshots.remove_branch(branch)
        try:
            snapshots.commit()
        except CommitFailedException:  # main moved between the read and the commit
            continue
        fault_point("published")
        log.event("published", table=tables.identifier(VALID), snapshot=head.snapshot_id, tag=tag,
                  rebased=rebased)
        return Published(head.snapshot_id, tag, rebased)
    raise TableError(f"{tables.identifier(VALID)}: main moved {PUBLISH_ATTEMPTS} times while batch "
                     f"{batch_id} was published; run the publish again")


def _check_judged(table: Table, head: Snapshot, batch_id: str, run_id: str | None) -> None:
    held = said(head, RUN_PROPERTY)
    if run_id is not None and held != run_id:
        raise UnjudgedRunError(
            f"{table.name()} branch {audit_branch(batch_id)} holds run {held}, but the gate judged run "
            f"{run_id}; not publishing rows nobody judged")


def _published_already(table: Table, batch_id: str, run_id: str | None, rebased: int) -> Published:
    """No branch: the batch's tag names a snapshot on main of the judged run (a publish killed
    after its commit, run again), else there is nothing to publish."""
    tag = batch_tag(batch_id)
    tagged = table.snapshot_by_name(tag)
    main = table.current_snapshot()
    if (tagged is not None and main is not None and said(tagged, RUN_PROPERTY) == run_id
            and tagged.snapshot_id in {s.snapshot_id for s in _ancestors(table, main)}):
        return Published(tagged.snapshot_id, tag, rebased)
    raise NothingStaged(f"{table.name()}: batch {batch_id} has no branch {audit_branch(batch_id)} to "
                        "publish (never staged, published by another run, or dropped)")


def _fresh(table: Table) -> Table:
    return table.refresh()


def _ancestors(table: Table, snapshot: Snapshot) -> list[Snapshot]:
    from pyiceberg.table.snapshots import ancestors_of

    return list(ancestors_of(snapshot, table.metadata))


def _rebase(table: Table, branch: str, batch_id: str, head: Snapshot, main: Snapshot) -> None:
    """Make the branch again on main's head with the batch's files the gate judged, and check it:
    the batch's files on it are exactly those, every other file is main's."""
    field_id = batch_field_id(table)
    judged = [f for f in data_files(table, head.snapshot_id) if file_batch(f, field_id) == batch_id]
    _branch_off(table, branch, main)  # a conflict here is the caller's: it reads main again
    table.refresh()
    properties = {**{key: value for key in (BATCH_PROPERTY, RUN_PROPERTY, OPERATION_PROPERTY)
                     if (value := said(head, key)) is not None},
                  REBASED_PROPERTY: str(head.snapshot_id)}
    committed = _replace(lambda: _fresh(table), branch, batch_id, judged, properties)
    on_branch = {f.file_path: f.record_count for f in data_files(table, committed.snapshot_id)}
    on_main = {f.file_path: f.record_count for f in data_files(table, main.snapshot_id)
               if file_batch(f, field_id) != batch_id}
    expected = {**on_main, **{f.file_path: f.record_count for f in judged}}
    if on_branch != expected:
        raise TableError(f"{table.name()} branch {branch} rebased on {main.snapshot_id} does not hold "
                         "main's files and the judged batch's alone; not publishing it")


# ------------------------------------------------------------------------ publish a judged run

def publish_judged(lake: Lake, dataset: str, batch_id: str, run_id: str | None, summary_uri: str,
                   released: dict[str, str] | None = None) -> BatchSummary:
    """Publish the run `run_id` the gate judged, under the batch's lease, then say so in its
    summary (the last thing written, with `released` when an operator let a held batch out);
    returns the summary as written. Refused (UnjudgedRunError) if another run staged since."""
    holder = run_id_from(f"publish-{run_id or 'run'}")
    with batch_lease(lake, dataset, batch_id, holder):
        summary = BatchSummary.from_json(read_json(summary_uri))
        if summary.run_id != run_id:
            raise UnjudgedRunError(
                f"{dataset} batch {batch_id}: the gate judged run {run_id} but run "
                f"{summary.run_id} is staged now; not publishing rows nobody judged"
            )
        if summary.tables is None:
            raise NothingStaged(f"{dataset} batch {batch_id}: its summary names no tables (written "
                                "before Foodtaster published to tables); run the batch again")
        published = publish_staged(DatasetTables(lake, dataset, summary.tables.names), batch_id, run_id)
        at = (released or {}).get("at") or datetime.now(UTC).isoformat(timespec="seconds")
        summary = summary.with_changes(
            published=True, published_at=at, released=released or summary.released,
            tables=summary.tables.published_as(published.snapshot_id, published.tag))
        write_json(summary_uri, summary.to_json())
    return summary
