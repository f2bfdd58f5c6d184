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
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SUSPECT = "_suspect"

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
    return joined.select(*rows.columns, suspect.alias(SUSPECT))


def suspects(rows: DataFrame, watches: Sequence[Watch]) -> DataFrame:
    """The rows whose verdict the batch can change, or that failed (`mark_suspects`)."""
    return mark_suspects(rows, watches).where(F.col(SUSPECT)).drop(SUSPECT)


def cleared(rows: DataFrame, watches: Sequence[Watch]) -> DataFrame:
    """The rows no other row can fail: passed, and no watched hash (`mark_suspects`)."""
    return mark_suspects(rows, watches).where(~F.col(SUSPECT)).drop(SUSPECT)
