"""The rows whose verdict the rest of the batch can change, apart from the rows it cannot.

A row that passed the pass stays valid unless another row of the batch says otherwise: a
copy of its unique key (`duplicates`) or a poison message of its group (`groups`). Both are
known as sets of 64-bit hashes before any row is written (the key hashes that repeat, the
groups of this batch's failed rows and of the open groups), so the batch splits in two with
one broadcast lookup of a long a watched column:

- the suspects: every failed row, and every row whose key or group hash is watched. A few
  percent of a batch, kept, and judged there alone (held, deduplicated, explained);
- the cleared rows: valid as they stand, written without any join but their line numbers.

A hash collision only makes a row a suspect, where it is judged on its real key and group.

The kept pass holds the bytes of its failed rows only (`bytes_of_failed_only`): a cleared row
is written without them, and the few suspects that passed have theirs read again
(`with_bytes_read_again`), checked against a hash of their bytes the pass kept, rather than
every row's bytes carried through the pass's checkpoint and its scans
(docs/decisions/003-the-pass-kept-on-disk.md, 006-suspects-judged-alone.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from foodtaster.engine.judging.layers import named

SUSPECT = "_suspect"
RAW_HASH = "_raw_hash"  # a 64-bit hash of the bytes of a row that passed the pass

# A watched column: the row's hash (null where it has none) and the hashes watched (one
# column of longs, each once).
Watch = tuple[Column, DataFrame]


def hash_or_null(column: Column) -> Column:
    """A 64-bit hash of `column`, null where it is null: a row with no key or group is watched
    by nothing (`xxhash64` of null is its seed, not null)."""
    return F.when(column.isNotNull(), F.xxhash64(column))


def mark_suspects(rows: DataFrame, watches: Sequence[Watch]) -> DataFrame:
    """Add `SUSPECT`: the row failed, or one of its hashes is watched."""
    suspect = F.col("_failed")
    joined = rows
    for i, (row_hash, watched) in enumerate(watches):
        name = f"_watched_{i}"
        (hash_column,) = watched.columns
        joined = joined.join(F.broadcast(watched.select(F.col(hash_column).alias(name))),
                             row_hash == F.col(name), "left")
        suspect = suspect | F.col(name).isNotNull()
    return joined.select(*map(named, rows.columns), suspect.alias(SUSPECT))


def suspects(rows: DataFrame, watches: Sequence[Watch]) -> DataFrame:
    """The rows whose verdict the batch can change, or that failed (`mark_suspects`)."""
    return mark_suspects(rows, watches).where(F.col(SUSPECT)).drop(SUSPECT)


def cleared(rows: DataFrame, watches: Sequence[Watch]) -> DataFrame:
    """The rows no other row can fail: passed, and no watched hash (`mark_suspects`)."""
    return mark_suspects(rows, watches).where(~F.col(SUSPECT)).drop(SUSPECT)


def bytes_of_failed_only(rows: DataFrame) -> DataFrame:
    """`_raw` kept where the row failed, null where it passed; `RAW_HASH` where it passed, so
    that `with_bytes_read_again` can tell it read back the same bytes."""
    failed = F.col("_failed")
    return rows.withColumns({RAW_HASH: F.when(~failed, F.xxhash64("_raw")),
                             "_raw": F.when(failed, F.col("_raw"))})


def with_bytes_read_again(rows: DataFrame, lines: DataFrame) -> DataFrame:
    """`rows` (from `bytes_of_failed_only`, few) with `_raw` whole again: a row's bytes read
    from `lines` (the batch read as the pass read it) by its row id, which is unique within a
    batch's read (a row id in `ingest.read_lines`, a stream sequence in `read_messages`). A row
    whose bytes are not found again, or whose bytes' hash differs from the pass's, fails the
    Spark job with an error that names it: a message's bytes are never guessed."""
    missing = rows.where(F.col("_raw").isNull()).select("_row_id")
    read = lines.select("_row_id", F.col("_raw").alias("_raw_read")).join(
        F.broadcast(missing), "_row_id", "left_semi")
    joined = rows.join(read, "_row_id", "left")
    lost = F.col("_raw").isNull() & (
        F.col("_raw_read").isNull() | (F.xxhash64("_raw_read") != F.col(RAW_HASH)))
    what = F.when(F.col("_raw_read").isNull(), F.lit("were not found when read again")).otherwise(
        F.lit("read again differ from those the pass judged"))
    error = F.raise_error(F.format_string(
        "the bytes of %s row %d %s: the input changed under the batch",
        F.col("_source_file"), F.col("_row_id"), what))
    raw = F.when(lost, error).otherwise(F.coalesce("_raw", "_raw_read"))
    return joined.select(*(raw.alias(c) if c == "_raw" else named(c) for c in rows.columns if c != RAW_HASH))
