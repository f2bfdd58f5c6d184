"""The lineage columns: where a row came from, on every row of `valid/` and `quarantine/`.

A row's identity across the lake is its lineage key: dataset (the partition it is in), batch,
source file and line (for a broker, the stream and the sequence). `_ingested_at` says when
its batch landed and is the same on a rerun.
"""

from __future__ import annotations

BATCH_ID = "_batch_id"
SOURCE_FILE = "_source_file"
LINE_NUMBER = "_line_number"  # 1-based; a broker message's stream sequence
INGESTED_AT = "_ingested_at"

LINEAGE_KEY = (BATCH_ID, SOURCE_FILE, LINE_NUMBER)
LINEAGE = (*LINEAGE_KEY, INGESTED_AT)


def lineage_key(batch_id: str, source_file: str, line_number: int | None) -> str:
    """A row's identity across raw, valid and quarantine, as one string."""
    return f"{batch_id}|{source_file}|{'' if line_number is None else line_number}"


def parse_lineage_key(key: str) -> tuple[str, str, int]:
    """`lineage_key`'s parts again: batch id, source file, line number (0 where it had none)."""
    batch_id, rest = key.split("|", 1)
    source_file, _, line = rest.rpartition("|")
    return batch_id, source_file, int(line) if line else 0
