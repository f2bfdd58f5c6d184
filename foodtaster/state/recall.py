"""A recall: a published row taken back out of its valid partition into the batch's quarantine.

A downstream consumer that crashed on a published row lists it (source `downstream`,
`report_downstream`) and recalls it: the row leaves
`valid/<ds>/batch_date=D/batch_id=B/` and becomes a quarantine row of the same batch with
the reason `registry` / `registry.recalled` (message: the entry's why, value: its id), its
`_raw` read back from the landed copy in raw/ (valid rows keep no bytes).

Each partition is rewritten aside (under `_runs/`, invisible to readers) and swapped in
whole (`swap_in`). The quarantine first, then valid: in between, the row is in both, never
in neither. A recall interrupted there is finished by running it again: it sees the row
already quarantined and only rewrites valid. The batch summary and ledger record get the
counts of the partitions afterwards (messages = valid + quarantined + duplicates dropped
still holds) and the recall itself (`recalled`, `recalls`).

pyarrow and fsspec only: the on-call CLI runs this without a JVM.
"""

from __future__ import annotations

import urllib.parse
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from foodtaster import rule_ids
from foodtaster.errors import Failed
from foodtaster.logs import batch_logger
from foodtaster.state import ledger
from foodtaster.state.browse import (
    NotInLake,
    Partition,
    _arrow_file,
    _data_files,
    message_bytes,
    partition,
    row_count,
)
from foodtaster.state.lake import (
    Lake,
    exists,
    fault_point,
    new_run_id,
    read_json,
    remove_dir,
    swap_in,
    write_json,
)
from foodtaster.state.lease import batch_lease
from foodtaster.state.poison import Entry, PoisonList, PoisonListError, Seen, fingerprint
from foodtaster.summary import BatchSummary

RULE = rule_ids.RECALLED
REASON = pa.struct([(name, pa.string()) for name in ("layer", "rule", "column", "message", "value")])


class RecallDoesNotAddUp(Failed):
    """After the rewrite, valid + quarantined + duplicates dropped is not the batch's messages."""


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
    """Move the row at `place` (default: where the entry was first seen) from its published
    valid partition to the quarantine, with the entry's why as the reason.

    Under the batch's lease, so a rerun of the batch and a recall never interleave. Running
    it again after it finished changes nothing; after it was interrupted, it finishes it.
    """
    seen = place or entry.first_seen
    if seen is None:
        raise PoisonListError(
            f"entry {entry.id} names no place (batch, file, line): a recall needs one; "
            "add the message with --batch, --file and --line"
        )
    valid_part = partition(lake, "valid", dataset, seen.batch_id)
    if valid_part is None:
        raise NotInLake(
            f"batch {seen.batch_id!r} of {dataset!r} has no published valid partition: nothing to "
            "recall; the entry stands, and the batch's next run quarantines the message as listed"
        )
    log = batch_logger(__name__, dataset, seen.batch_id)
    date, batch_id = valid_part.batch_date, valid_part.batch_id
    with batch_lease(lake, dataset, batch_id, f"recall-{new_run_id()}"):
        hits = _rows_at(valid_part, seen.source_file, seen.line_number)
        quarantine_part = partition(lake, "quarantine", dataset, batch_id)
        already = _recalled_at(quarantine_part, seen.source_file, seen.line_number)
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
            rows = pa.concat_tables([_read(f, None) for f in hits]).filter(
                _at(seen.source_file, seen.line_number))
            quarantine_uri = lake.quarantine(dataset, date, batch_id)
            _rewrite(lake, "quarantine", dataset, date, batch_id, quarantine_uri,
                     keep=_data_files(quarantine_uri),
                     extra=_quarantine_rows(rows, raw, entry, quarantine_part),
                     like=(_data_files(quarantine_uri) or hits)[0])
            log.event("recall_quarantined", entry=entry.id, file=seen.source_file, line=seen.line_number)
        fault_point("recall_quarantined")
        moved = _count_at(hits, seen.source_file, seen.line_number)
        if hits:
            _rewrite(lake, "valid", dataset, date, batch_id, valid_part.uri,
                     keep=[f for f in _data_files(valid_part.uri) if f not in hits],
                     cut=(hits, seen.source_file, seen.line_number))
        outcome = _account(lake, dataset, date, batch_id, entry, seen.source_file, seen.line_number,
                           moved=moved, by=by)
    log.event("recalled", entry=entry.id, file=seen.source_file, line=seen.line_number,
              moved=outcome.moved, valid=outcome.valid, quarantined=outcome.quarantined, by=by)
    return outcome


def _at(source_file: str, line_number: int) -> pc.Expression:
    """The rows of one place; the lineage's file must be named exactly (as `first_seen` keeps it)."""
    return (pc.field("_source_file") == source_file) & (pc.field("_line_number") == line_number)


def _read(uri: str, columns: list[str] | None) -> pa.Table:
    fs, path = _arrow_file(uri)
    return pq.read_table(path, filesystem=fs, columns=columns)


def _rows_at(part: Partition, source_file: str, line_number: int) -> list[str]:
    """The partition's files holding a row of that place (a place is one row; a file is found
    by its lineage columns alone, not read whole)."""
    return [uri for uri in _data_files(part.uri)
            if _read(uri, ["_source_file", "_line_number"]).filter(_at(source_file, line_number)).num_rows]


def _count_at(files: list[str], source_file: str, line_number: int) -> int:
    return sum(_read(uri, ["_source_file", "_line_number"]).filter(_at(source_file, line_number)).num_rows
               for uri in files)


def _recalled_at(part: Partition | None, source_file: str, line_number: int) -> bool:
    """True when the quarantine already holds the row as recalled (an earlier call got that far)."""
    if part is None:
        return False
    for uri in _data_files(part.uri):
        table = _read(uri, ["reasons", "_source_file", "_line_number"]).filter(_at(source_file, line_number))
        for reasons in table.column("reasons").to_pylist():
            if any(r["rule"] == RULE for r in reasons or ()):
                return True
    return False


def _quarantine_rows(rows: pa.Table, raw: bytes, entry: Entry, part: Partition | None) -> pa.Table:
    """The recalled rows shaped as the batch's quarantine rows: `_raw`, one `registry.recalled`
    reason, the typed fields as they were published, lineage."""
    files = _data_files(part.uri) if part else []
    if files:  # the batch's own quarantine schema, Spark's metadata included
        fs, path = _arrow_file(files[0])
        schema = pq.read_schema(path, filesystem=fs)
    else:
        schema = pa.schema([pa.field("_raw", pa.binary()), pa.field("reasons", pa.list_(REASON)),
                            *rows.schema])
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


def _rewrite(lake: Lake, zone: str, dataset: str, date: str, batch_id: str, target: str, *,
             keep: list[str], extra: pa.Table | None = None, like: str | None = None,
             cut: tuple[list[str], str, int] | None = None) -> None:
    """Build the partition's new folder aside and swap it in whole: the files in `keep` copied
    as they are, the files in `cut` rewritten without the rows of that place, `extra` added."""
    aside = lake.run_output(zone, dataset, date, batch_id, f"recall-{new_run_id()}")
    fs, folder = fsspec.core.url_to_fs(aside)
    fs.makedirs(folder, exist_ok=True)
    for uri in keep:
        fs.copy(fsspec.core.url_to_fs(uri)[1], f"{folder}/{uri.rsplit('/', 1)[-1]}")
    if cut is not None:
        files, source_file, line_number = cut
        for uri in files:
            table = _read(uri, None)
            _write(table.filter(~_at(source_file, line_number)), f"{aside}/{uri.rsplit('/', 1)[-1]}",
                   like=uri)
    if extra is not None:
        _write(extra, f"{aside}/part-recall-{new_run_id()}.snappy.parquet", like=like)
    fs.touch(f"{folder}/_SUCCESS")
    swap_in(aside, target)
    remove_dir(lake.runs(zone, dataset, date, batch_id))  # what was at `target` before


def _write(table: pa.Table, uri: str, like: str | None) -> None:
    """Parquet with the timestamps stored as in the file `like`: Spark writes INT96, which pyarrow
    reads as nanoseconds without a zone, a type Spark 4 cannot read back (nor mix with its own
    timestamps); written as INT96 again, the values and Spark's type are kept."""
    int96 = False
    if like is not None:
        fs, path = _arrow_file(like)
        schema = pq.ParquetFile(path, filesystem=fs).schema
        int96 = any(schema.column(i).physical_type == "INT96" for i in range(len(schema)))
    fs, path = _arrow_file(uri)
    pq.write_table(table, path, filesystem=fs, compression="snappy", use_deprecated_int96_timestamps=int96)


def _recalled_partition(lake: Lake, zone: str, dataset: str, batch_id: str) -> Partition:
    """A partition of the batch after its recall: the valid one it started from, the quarantine
    one it found or wrote (under the batch's lease, nothing removes them)."""
    found = partition(lake, zone, dataset, batch_id)
    if found is None:
        raise NotInLake(f"batch {batch_id!r} of {dataset!r} has no {zone} partition after its recall")
    return found


def _account(lake: Lake, dataset: str, date: str, batch_id: str, entry: Entry, source_file: str,
             line_number: int, *, moved: int, by: str) -> Recalled:
    """Counts from the partitions as they are now, into the summary and the ledger record."""
    valid = row_count(_recalled_partition(lake, "valid", dataset, batch_id))
    quarantine_part = _recalled_partition(lake, "quarantine", dataset, batch_id)
    quarantined = row_count(quarantine_part)
    rules: Counter[str] = Counter()
    for uri in _data_files(quarantine_part.uri):
        for reasons in _read(uri, ["reasons"]).column("reasons").to_pylist():
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
