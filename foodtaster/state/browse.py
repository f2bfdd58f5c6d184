"""Read the lake without Spark: the tables' batches, quarantined rows, landed lines, the ledger.

For an on-call person's command line: the valid and quarantine tables are read through the
catalog by pyiceberg (`foodtaster.state.tables`), a batch at a time and only the columns asked
for, and the landed copies in `raw/` through fsspec, with no JVM to start. (DuckDB would add SQL
but not reach fsspec roots such as `memory://` the same way, and is one more package for what is
a filter on one batch.)

The tables are read as main has them (what consumers see) unless a ref (an audit branch, a tag)
is named. `raw/` holds one folder a landed batch, `raw/<dataset>/batch_date=<d>/batch_id=<id>/`.
"""

from __future__ import annotations

import gzip
import io
import itertools
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from foodtaster.contract.path import Path
from foodtaster.errors import NotFound
from foodtaster.lineage import LINEAGE
from foodtaster.rule_ids import LISTED as LISTED_RULE
from foodtaster.state.lake import Lake, read_json
from foodtaster.state.poison import Seen
from foodtaster.state.tables import MAIN, QUARANTINE, VALID, BatchFiles, DatasetTables

CHUNK_BYTES = 1 << 20


class NotInLake(NotFound):
    """What was asked for is not in the lake; the message says where it looked."""


@dataclass(frozen=True)
class Landed:
    """A landed batch's folder in `raw/`."""

    dataset: str
    batch_date: str
    batch_id: str
    uri: str


def landed_batches(lake: Lake, dataset: str) -> list[Landed]:
    """The landed batches of a dataset, in data order (batch date, then batch id)."""
    fs, root = fsspec.core.url_to_fs(lake.zone("raw", dataset))
    if not fs.exists(root):
        return []
    found = []
    for path in fs.glob(f"{root}/batch_date=*/batch_id=*"):
        date_part, id_part = path.rstrip("/").split("/")[-2:]
        if fs.isdir(path):
            found.append(Landed(dataset, date_part.split("=", 1)[1], id_part.split("=", 1)[1],
                                fs.unstrip_protocol(path)))
    return sorted(found, key=lambda p: (p.batch_date, p.batch_id))


def landed_batch(lake: Lake, dataset: str, batch_id: str) -> Landed | None:
    return next((p for p in landed_batches(lake, dataset) if p.batch_id == batch_id), None)


def batches(lake: Lake, zone: str, dataset: str, ref: str = MAIN) -> list[BatchFiles]:
    """The batches a table (`valid` or `quarantine`) holds on `ref`, in data order."""
    return DatasetTables(lake, dataset).batches(zone, ref)


def batch(lake: Lake, zone: str, dataset: str, batch_id: str, ref: str = MAIN) -> BatchFiles | None:
    return DatasetTables(lake, dataset).batch(zone, batch_id, ref)


def read_batch(lake: Lake, zone: str, dataset: str, batch_id: str | None,
               columns: list[str] | None = None, ref: str = MAIN) -> pa.Table:
    """A batch's rows (every batch's with None) on `ref`, only `columns` when given; a column the
    table lacks is left out (a quarantine of unreadable files alone has no contract columns)."""
    tables = DatasetTables(lake, dataset)
    if columns is not None:
        have = set(tables.columns(zone))
        columns = [c for c in columns if c in have]
    return tables.read(zone, batch_id, columns, ref)


def table_columns(lake: Lake, zone: str, dataset: str) -> list[str]:
    return DatasetTables(lake, dataset).columns(zone)


def root_column(path: str) -> str:
    """The top-level column a field's path starts with (`data` of `data.order_id`; the key
    `app.name` of `["app.name"]`): the path parsed, never split at a dot."""
    return Path.parse(path).keys[0]


def column_at(table: pa.Table, path: str) -> pa.ChunkedArray:
    """The values of a field named by its path, read with the path's first name: a nested
    field (`data.order_id`, group_by of a nested dataset) through the structs on its way.

    (pyarrow reads a column `data.order_id` as one named `order_id`: the path's first name
    is read instead, the rest followed here.) The path is parsed, never split at a dot: a
    quoted key (`data["app.name"]`) is one name."""
    if path in table.column_names:
        return table.column(path)
    root, *rest = Path.parse(path).keys
    column = table.column(root)
    for name in rest:
        column = pc.struct_field(column, name)
    return column


def with_reason(reasons: pa.Array | pa.ChunkedArray, matched: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """Per row of a `reasons` column, whether one of its reasons' rules is `matched`
    (`matched` maps the array of every row's rules to booleans; a null never matches)."""
    if isinstance(reasons, pa.ChunkedArray):
        reasons = reasons.combine_chunks()
    rules = pc.struct_field(pc.list_flatten(reasons), "rule")
    rows = pc.unique(pc.list_parent_indices(reasons).filter(pc.fill_null(matched(rules), False)))
    return pc.is_in(pa.array(range(len(reasons)), pa.int64()), value_set=pc.cast(rows, pa.int64()))


def quarantine_batches(lake: Lake, dataset: str) -> list[dict[str, Any]]:
    """One row a batch in the quarantine table: date, batch, how many rows, how many listed, top reason."""
    rows = []
    by_batch: dict[str, Counter[str]] = {}
    every = read_batch(lake, QUARANTINE, dataset, None, ["batch_id", "reasons"])
    for batch_id, reasons in zip(every.column("batch_id").to_pylist(), every.column("reasons").to_pylist(),
                                 strict=True):
        by_batch.setdefault(batch_id, Counter()).update({reason["rule"] for reason in reasons or ()})
    for part in batches(lake, QUARANTINE, dataset):
        rules = by_batch.get(part.batch_id, Counter())
        top = rules.most_common(1)
        rows.append({
            "batch_date": part.batch_date, "batch_id": part.batch_id, "quarantined": part.rows,
            "listed": rules.get(LISTED_RULE, 0),
            "top_reason": top[0][0] if top else None, "top_reason_count": top[0][1] if top else 0,
        })
    return rows


def quarantined_rows(
    lake: Lake, dataset: str, batch_id: str, rule: str | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """A batch's quarantined rows in file and line order: lineage, reasons, `_raw` (bytes).

    `rule` keeps the rows with a reason of that rule; `limit` the first that many.
    """
    if batch(lake, QUARANTINE, dataset, batch_id) is None:
        raise NotInLake(
            f"no quarantined rows of batch {batch_id!r} of {dataset!r} in its quarantine table: "
            "`foodtaster quarantine ls` lists the batches that have some"
        )
    table = read_batch(lake, QUARANTINE, dataset, batch_id, ["_raw", "reasons", *LINEAGE])
    if rule is not None:
        table = table.filter(with_reason(table.column("reasons"), lambda rules: pc.equal(rules, rule)))
    rows = sorted(table.to_pylist(), key=lambda r: (r["_source_file"] or "", r["_line_number"] or 0))
    return rows[:limit] if limit is not None else rows


def message_bytes(
    lake: Lake, dataset: str, batch_id: str, source_file: str, line_number: int
) -> tuple[bytes, Seen]:
    """A message's bytes as landed (the line without its ending), found by its lineage.

    `source_file` is the lineage's `_source_file` or any tail of it (the file's name).
    The quarantine keeps the bytes of its rows; any other line (a valid one, a
    duplicate dropped) is read from the batch's landed copy in `raw/`.
    """
    if line_number < 1:
        raise NotInLake(f"line {line_number}: line numbers start at 1, as in `foodtaster quarantine show`")
    if batch(lake, QUARANTINE, dataset, batch_id) is not None:
        table = read_batch(lake, QUARANTINE, dataset, batch_id, ["_raw", "_source_file", "_line_number"])
        for row in table.to_pylist():
            if row["_line_number"] == line_number and _names(row["_source_file"], source_file):
                return bytes(row["_raw"]), Seen(batch_id, row["_source_file"], line_number)
    raw = landed_batch(lake, dataset, batch_id)
    if raw is None:
        raise NotInLake(
            f"batch {batch_id!r} of {dataset!r} has no raw partition and no quarantined row "
            f"{source_file}:{line_number}: check the batch id with `foodtaster batches`"
        )
    manifest = read_json(f"{raw.uri}/_manifest.json")
    names = [entry["name"] for entry in manifest.get("files", ())]
    matches = [name for name in names if _names(f"{raw.uri}/{name}", source_file)]
    if len(matches) != 1:
        raise NotInLake(
            f"batch {batch_id!r} of {dataset!r}: {source_file!r} names "
            f"{'none' if not matches else 'more than one'} of its files {names}: give the file's name"
        )
    uri = f"{raw.uri}/{matches[0]}"
    fs, path = fsspec.core.url_to_fs(uri)
    with fs.open(path, "rb") as handle:
        stream = gzip.GzipFile(fileobj=handle) if path.endswith(".gz") else handle
        line = next(itertools.islice(landed_lines(stream), line_number - 1, None), None)
    if line is None:
        raise NotInLake(f"{uri} has fewer than {line_number} lines")
    return line, Seen(batch_id, _lineage_name(lake, dataset, batch_id, matches[0], line_number) or uri,
                      line_number)


def _lineage_name(lake: Lake, dataset: str, batch_id: str, name: str, line_number: int) -> str | None:
    """The file as the published row's lineage names it (Spark's URI form), so that the
    place recorded matches the row's `_source_file`; None when no valid row has that place."""
    if batch(lake, VALID, dataset, batch_id) is None:
        return None
    table = read_batch(lake, VALID, dataset, batch_id, ["_source_file", "_line_number"])
    return next((row["_source_file"] for row in table.to_pylist()
                 if row["_line_number"] == line_number and _names(row["_source_file"], name)), None)


def _names(lineage_file: str, given: str) -> bool:
    """True when `given` is the lineage's file or a tail of it at a `/` boundary."""
    given = given.strip("/")
    # Spark's file paths are URIs: a space in a name is %20 there.
    return any(name == given or name.endswith("/" + given)
               for name in (lineage_file, urllib.parse.unquote(lineage_file)))


def landed_lines(stream: io.BufferedIOBase | io.RawIOBase) -> Iterator[bytes]:
    """Lines without their endings, split as Spark's text source does: `\\n`, `\\r\\n` or `\\r`."""
    reader = io.BufferedReader(stream, CHUNK_BYTES) if not isinstance(stream, io.BufferedIOBase) else stream
    pending = b""
    while chunk := reader.read(CHUNK_BYTES):
        pending += chunk
        # A `\r` at the chunk's end may be the first half of `\r\n`: keep it for the next chunk.
        parts = pending.splitlines(keepends=True)
        pending = parts.pop() if parts and not parts[-1].endswith(b"\n") else b""
        for part in parts:
            yield part.rstrip(b"\r\n")
    if pending:
        yield pending.rstrip(b"\r\n")
