"""A recall: a published row taken back out of the valid table into the batch's quarantine.

A downstream consumer that crashed on a published row lists it (source `downstream`,
`report_downstream`) and recalls it: the row leaves main of the valid table and becomes a
quarantine row of the same batch with the reason `registry` / `registry.recalled` (message: the
entry's why, value: its id), its `_raw` read back from the landed copy in raw/ (valid rows keep
no bytes).

Two snapshots, one a table (docs/decisions/027-iceberg-tables-write-audit-publish.md), in this
order: the quarantine table gains the row (one file appended), then the valid table loses it
(the one file that held it replaced by a copy without it, every other file kept). In between the
row is in both tables, never in neither: a reader of the quarantine already sees it as
`registry.recalled`, a consumer of valid still sees it. A recall interrupted there is finished by
running it again: it sees the row already quarantined and only rewrites valid. The batch summary
and ledger record get the counts of the tables afterwards (messages = valid + quarantined +
duplicates dropped still holds) and the recall itself (`recalled`, `recalls`). The tag
`batch-<batch>` keeps naming the snapshot that published the batch, the row in it.

pyarrow and pyiceberg only: the on-call CLI runs this without a JVM.
"""

from __future__ import annotations

import urllib.parse
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from foodtaster import rule_ids
from foodtaster.errors import Failed
from foodtaster.logs import batch_logger
from foodtaster.state import ledger
from foodtaster.state.browse import NotInLake, message_bytes
from foodtaster.state.lake import Lake, exists, fault_point, new_run_id, read_json, write_json
from foodtaster.state.lease import batch_lease
from foodtaster.state.poison import Entry, PoisonList, PoisonListError, Seen, fingerprint
from foodtaster.state.publish import commit_changes
from foodtaster.state.tables import (
    MAIN,
    QUARANTINE,
    VALID,
    DatasetTables,
    batch_field_id,
    data_files,
    file_batch,
)
from foodtaster.summary import BatchSummary

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

RULE = rule_ids.RECALLED


class RecallDoesNotAddUp(Failed):
    """After the recall, valid + quarantined + duplicates dropped is not the batch's messages."""


@dataclass(frozen=True)
class Recalled:
    """What a recall did: where the row was, and the batch's counts after it."""

    dataset: str
    batch_id: str
    batch_date: str
    source_file: str
    line_number: int
    entry: str
    moved: int  # rows taken out of valid by this call (0: an earlier call had done it)
    messages: int | None  # None when the batch has neither summary nor ledger record
    valid: int
    quarantined: int
    recalled: int
    duplicates_dropped: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def recall(lake: Lake, dataset: str, entry: Entry, place: Seen | None = None, *, by: str) -> Recalled:
    """Move the row at `place` (default: where the entry was first seen) from main of the valid
    table to the quarantine table, with the entry's why as the reason.

    Under the batch's lease, so a rerun of the batch and a recall never interleave. Running
    it again after it finished changes nothing; after it was interrupted, it finishes it.
    """
    seen = place or entry.first_seen
    if seen is None:
        raise PoisonListError(
            f"entry {entry.id} names no place (batch, file, line): a recall needs one; "
            "add the message with --batch, --file and --line"
        )
    tables = DatasetTables(lake, dataset)
    published = tables.batch(VALID, seen.batch_id)
    if published is None:
        raise NotInLake(
            f"batch {seen.batch_id!r} of {dataset!r} has no published valid rows: nothing to "
            "recall; the entry stands, and the batch's next run quarantines the message as listed"
        )
    log = batch_logger(__name__, dataset, seen.batch_id)
    date, batch_id = published.batch_date, published.batch_id
    recall_id = f"recall-{new_run_id()}"
    with batch_lease(lake, dataset, batch_id, recall_id):
        valid_table = tables.table(VALID)
        hits = _files_at(valid_table, batch_id, seen.source_file, seen.line_number)
        already = _recalled_at(tables, batch_id, seen.source_file, seen.line_number)
        if not hits and not already:
            raise NotInLake(
                f"no published row {seen.source_file}:{seen.line_number} in batch {batch_id!r} of "
                f"{dataset!r}: `foodtaster quarantine show --batch {batch_id}` shows whether it is "
                "quarantined already"
            )
        if hits and not already:
            # The landed file by its name: the lineage is Spark's URI of it (file:..., %3D).
            name = urllib.parse.unquote(seen.source_file.rsplit("/", 1)[-1])
            raw, _ = message_bytes(lake, dataset, batch_id, name, seen.line_number)
            rows = pa.concat_tables([_read(valid_table, f) for f in hits]).filter(
                _at(seen.source_file, seen.line_number))
            quarantine_table = tables.table(QUARANTINE)
            folder = tables.run_folder(QUARANTINE, quarantine_table, date, batch_id, recall_id)
            added = _write(quarantine_table, _quarantine_rows(rows, raw, entry, quarantine_table),
                           f"{folder}/part-recall.parquet")
            commit_changes(tables, QUARANTINE, MAIN, batch_id, add=[added], remove=(), run_id=recall_id,
                           operation="recall")
            log.event("recall_quarantined", entry=entry.id, file=seen.source_file, line=seen.line_number)
        fault_point("recall_quarantined")
        moved = sum(_rows_at(valid_table, f, seen.source_file, seen.line_number) for f in hits)
        if hits:
            folder = tables.run_folder(VALID, valid_table, date, batch_id, recall_id)
            kept = []
            for n, data_file in enumerate(hits):
                left = _read(valid_table, data_file).filter(~_at(seen.source_file, seen.line_number))
                if left.num_rows:
                    kept.append(_write(valid_table, left, f"{folder}/part-{n:05d}.parquet"))
            commit_changes(tables, VALID, MAIN, batch_id, add=kept, remove=[f.file_path for f in hits],
                           run_id=recall_id, operation="recall")
        outcome = _account(lake, tables, date, batch_id, entry, seen.source_file, seen.line_number,
                           moved=moved, by=by)
    log.event("recalled", entry=entry.id, file=seen.source_file, line=seen.line_number,
              moved=outcome.moved, valid=outcome.valid, quarantined=outcome.quarantined, by=by)
    return outcome


def _at(source_file: str, line_number: int) -> pc.Expression:
    """The rows of one place; the lineage's file must be named exactly (as `first_seen` keeps it)."""
    return (pc.field("_source_file") == source_file) & (pc.field("_line_number") == line_number)


def _read(table: Table, data_file: DataFile, columns: list[str] | None = None) -> pa.Table:
    """One of the table's data files as written (its own schema)."""
    with table.io.new_input(data_file.file_path).open() as stream:
        return pq.read_table(stream, columns=columns)


def _rows_at(table: Table, data_file: DataFile, source_file: str, line_number: int) -> int:
    rows = _read(table, data_file, ["_source_file", "_line_number"])
    return rows.filter(_at(source_file, line_number)).num_rows


def _files_at(table: Table, batch_id: str, source_file: str, line_number: int) -> list[DataFile]:
    """The batch's files on main holding a row of that place (a place is one row; a file is
    found by its lineage columns alone, not read whole)."""
    main = table.current_snapshot()
    if main is None:
        return []
    field_id = batch_field_id(table)
    return [f for f in data_files(table, main.snapshot_id)
            if file_batch(f, field_id) == batch_id and _rows_at(table, f, source_file, line_number)]


def _recalled_at(tables: DatasetTables, batch_id: str, source_file: str, line_number: int) -> bool:
    """True when the quarantine already holds the row as recalled (an earlier call got that far)."""
    if tables.batch(QUARANTINE, batch_id) is None:
        return False
    table = tables.read(QUARANTINE, batch_id, ["reasons", "_source_file", "_line_number"])
    for reasons in table.filter(_at(source_file, line_number)).column("reasons").to_pylist():
        if any(r["rule"] == RULE for r in reasons or ()):
            return True
    return False


def _quarantine_rows(rows: pa.Table, raw: bytes, entry: Entry, quarantine: Table) -> pa.Table:
    """The recalled rows shaped as the quarantine table's rows: `_raw`, one `registry.recalled`
    reason, the typed fields as they were published, lineage, the batch's date and id."""
    schema = quarantine.schema().as_arrow()
    reason = {"layer": "registry", "rule": RULE, "column": None, "message": entry.why, "value": entry.id}
    columns = []
    for field in schema:
        if field.name == "_raw":
            columns.append(pa.array([raw] * rows.num_rows, field.type))
        elif field.name == "reasons":
            columns.append(pa.array([[reason]] * rows.num_rows, field.type))
        elif field.name in rows.column_names:
            columns.append(rows.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(rows.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _write(table: Table, rows: pa.Table, path: str) -> str:
    """Parquet a table can take: timestamps in microseconds, as Spark writes them for it."""
    with table.io.new_output(path).create(overwrite=True) as stream:
        pq.write_table(rows, stream, compression="snappy", coerce_timestamps="us")
    return path


def _account(lake: Lake, tables: DatasetTables, date: str, batch_id: str, entry: Entry, source_file: str,
             line_number: int, *, moved: int, by: str) -> Recalled:
    """Counts from the tables as they are now, into the summary and the ledger record."""
    dataset = tables.dataset
    valid = getattr(tables.batch(VALID, batch_id), "rows", 0)
    quarantined = getattr(tables.batch(QUARANTINE, batch_id), "rows", 0)
    rules: Counter[str] = Counter()
    for reasons in tables.read(QUARANTINE, batch_id, ["reasons"]).column("reasons").to_pylist():
        rules.update({r["rule"] for r in reasons or ()})
    counts = {"valid": valid, "quarantined": quarantined, "recalled": rules.get(RULE, 0)}
    record = {"entry": entry.id, "source_file": source_file, "line_number": line_number,
              "why": entry.why, "by": by, "at": datetime.now(UTC).isoformat(timespec="seconds")}
    summary_uri = lake.summary(dataset, batch_id)
    summary = BatchSummary.from_json(read_json(summary_uri)) if exists(summary_uri) else None
    written = ledger.record_recall(lake, dataset, batch_id, counts, record)
    # what the batch held before: its summary says, else its ledger record (a batch without one)
    held = ((summary.messages, summary.duplicates_dropped) if summary is not None
            else (written["messages"], written["duplicates_dropped"]) if written is not None else None)
    if held is not None and held[0] != valid + quarantined + held[1]:
        raise RecallDoesNotAddUp(
            f"{dataset} batch {batch_id} after the recall: {held[0]} messages but {valid} valid "
            f"+ {quarantined} quarantined + {held[1]} duplicates dropped"
        )
    if summary is not None:
        messages = summary.messages
        write_json(summary_uri, summary.with_changes(
            **counts, reasons={**summary.reasons, RULE: counts["recalled"]},
            quarantine_rate=round(quarantined / messages, 6) if messages else 0.0,
            recalls=[*[r for r in summary.recalls or () if r["entry"] != entry.id], record],
        ).to_json())
    return Recalled(dataset=dataset, batch_id=batch_id, batch_date=date, source_file=source_file,
                    line_number=line_number, entry=entry.id, moved=moved,
                    messages=held[0] if held else None, valid=valid, quarantined=quarantined,
                    recalled=counts["recalled"], duplicates_dropped=held[1] if held else None)


def report_downstream(
    lake: Lake,
    dataset: str,
    *,
    batch_id: str,
    source_file: str,
    line_number: int,
    why: str,
    reporter: str,
    key: str | None = None,
    recall: bool = False,
) -> Entry:
    """A consumer whose task crashed on a published row lists it in one call.

    The row is named by its lineage (`_batch_id`, `_source_file`, `_line_number`, as
    published); the entry matches its exact bytes, read back from the lake, or with
    `key` every message with that unique key value. `recall=True` also takes the row
    back out of its valid partition into the quarantine (`recall`); called
    again, it finishes a recall that was interrupted.
    """
    raw, seen = message_bytes(lake, dataset, batch_id, source_file, line_number)
    match, value = ("key", key) if key is not None else ("fingerprint", fingerprint(raw))
    entry = PoisonList(lake, dataset).add(match, value, why, "downstream", added_by=reporter,
                                          first_seen=seen)
    if recall:
        _recall(lake, dataset, entry, seen, by=reporter)  # this place, even if listed before
    return entry


_recall = recall  # `report_downstream`'s `recall` flag shadows the function's name
