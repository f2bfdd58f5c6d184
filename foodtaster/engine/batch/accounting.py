"""Nothing is lost: the batch counted from what was written, checked before anything is
swapped in, and a few quarantined rows kept as samples for the summary and the alert."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from foodtaster.errors import Failed
from foodtaster.privacy import NOT_SHOWN, Masker

SAMPLE_COUNT = 5
SAMPLE_MAX_CHARS = 500
# What `quarantine_counts` counts each row as, besides its rules: no rule id starts with "*".
ROWS = "*rows"


class CountsDoNotAddUp(Failed):
    """Rows went missing (or appeared) between reading and writing: nothing is swapped in."""


def check_accounting(
    messages: int, valid: int, quarantined: int, dropped: int, dataset: str, batch_id: str
) -> None:
    """Every message read is valid, quarantined or a dropped duplicate."""
    if messages != valid + quarantined + dropped:
        raise CountsDoNotAddUp(
            f"{dataset} batch {batch_id}: {messages} messages read but {valid} valid + "
            f"{quarantined} quarantined + {dropped} duplicates dropped = "
            f"{valid + quarantined + dropped} written; nothing was swapped in or published"
        )


def quarantine_counts(quarantine: DataFrame) -> tuple[int, dict[str, int]]:
    """How many rows the quarantine holds, and how many of them each rule caught (most first,
    then by rule), in one aggregate: each row counts once as `ROWS` and once a rule it has.
    One Spark execution, not a count and a sorted aggregate
    (docs/decisions/007-the-batch-counted-in-one-aggregate.md)."""
    row_rules = F.coalesce(F.array_distinct("reasons.rule"), F.array().cast("array<string>"))
    counted = {
        r["rule"]: r["count"]
        for r in quarantine.select(F.explode(F.concat(F.array(F.lit(ROWS)), row_rules)).alias("rule"))
        .groupBy("rule").count().collect()
    }
    rows = counted.pop(ROWS, 0)
    return rows, dict(sorted(counted.items(), key=lambda item: (-item[1], item[0])))


def samples(quarantine: DataFrame, masker: Masker) -> list[dict[str, Any]]:
    """The first few quarantined rows in file order, each as a person without the raw-payload
    permission may read it (`sample`): the summary is a report, and the alerts rendered from it
    are files the batches page serves to every logged-in user, emails and Slack messages."""
    return [
        sample(r["_source_file"], r["_line_number"], bytes(r["_raw"]),
               [reason.asDict() for reason in r["reasons"]], masker)
        for r in quarantine.orderBy("_source_file", "_line_number").limit(SAMPLE_COUNT).collect()
    ]


def sample(source_file: str, line_number: int | None, raw: bytes, reasons: list[dict[str, Any]],
           masker: Masker) -> dict[str, Any]:
    """One quarantined message for the summary: its text (`shown_sample`), and its reasons (masked
    as written) with a line's start as its length and keyed hash (`Masker.reason_value`), in
    every dataset: the masks the batch page shows a viewer, from the same key."""
    return {"source_file": source_file, "line_number": line_number, "raw": shown_sample(raw, masker),
            "reasons": [{**reason, "value": masker.reason_value(reason)} for reason in reasons]}


def shown_sample(raw: bytes, masker: Masker) -> str:
    """A message as a person may read it (`Masker.message`), cut: a line that is no JSON object
    as its length and keyed hash in every dataset; a JSON object as it came (escaped) when the
    dataset marks nothing personal."""
    masked = masker.message(raw)
    text = masked if masker.paths or masked.startswith(NOT_SHOWN) else escape_sample(raw)
    return text if len(text) <= SAMPLE_MAX_CHARS else text[:SAMPLE_MAX_CHARS] + "…"


def escape_sample(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
    return text if len(text) <= SAMPLE_MAX_CHARS else text[:SAMPLE_MAX_CHARS] + "…"
