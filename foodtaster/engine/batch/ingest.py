"""Read a batch's files as lines with their exact bytes and lineage.

Spark's text source keeps each line's bytes as they were (no UTF-8 check), and
strips `\\n`, `\\r\\n` or `\\r`. Line numbers come from each row's place in its
file split: a split's first row id and its line offset in the file are computed
from a tiny per-split aggregate, never per row on the driver.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.classic.column import Column as ClassicColumn
from pyspark.sql.classic.column import _to_java_column, _to_seq

from foodtaster.engine.judging import layers
from foodtaster.sources.raw_batch import LandedFile

SPLIT_KEYS = ["_source_file", "_split_start"]


def on_disk(uri: Column) -> Column:
    """A path as Spark's file metadata spells it (URI-encoded: `with%20space.jsonl`) as it is
    on disk, the spelling of the manifest and of a person's `ls`.

    `url_decode` would read a literal `+` (which Hadoop leaves unencoded) as a space, so it is
    escaped first. A path without `%` is already spelled as on disk: only those are decoded,
    since the decode runs on every line
    (docs/decisions/002-one-cheap-pass-then-explain-the-failed.md).
    """
    return F.when(uri.contains("%"), F.url_decode(F.regexp_replace(uri, r"\+", "%2B"))).otherwise(uri)


def read_lines(spark: SparkSession, path: str, line_read_bytes: int | None = None) -> DataFrame:
    """Every line under `path` (a file or a folder; `.gz` decompressed) with row ids.

    Columns: `_text` (the line as Spark reads it), `_raw` (its bytes), `_source_file`,
    `_split_start`, `_modified_at`, `_row_id` (increasing within a split).

    With `line_read_bytes`, Hadoop's LineRecordReader skips a line whose bytes with its
    terminator reach it, holding at most that many: a 300 MB line without a newline costs
    no more memory than an ordinary one. Landing records those lines (`too_large` in the
    manifest) so the job quarantines them and numbers the lines around them.
    """
    reader = spark.read
    if line_read_bytes is not None:
        reader = reader.option("mapreduce.input.linerecordreader.line.maxlength", str(line_read_bytes))
    text = reader.text(path)
    if line_read_bytes is not None:
        # Where a skipped line crosses the end of a file split, the reader still returns its
        # first `line_read_bytes` bytes; a line it reads whole is always shorter.
        text = text.where(F.octet_length("value") < line_read_bytes)
    return text.select(
        F.col("value").alias("_text"),
        F.col("value").cast("binary").alias("_raw"),
        on_disk(F.col("_metadata.file_path")).alias("_source_file"),
        F.col("_metadata.file_block_start").alias("_split_start"),
        F.col("_metadata.file_modification_time").alias("_modified_at"),
        F.monotonically_increasing_id().alias("_row_id"),
    )


def split_aggregates() -> list[Column]:
    """A file split's first row id, its line count and its file's modification time, as
    aggregates of its rows."""
    return [F.min("_row_id").alias("_first_row_id"), F.count("*").alias("_split_lines"),
            F.max("_modified_at").alias("_split_modified_at")]


def with_lines_before(per_split: DataFrame) -> DataFrame:
    """Add `_lines_before` to one row a split (`split_aggregates`): how many lines of its file
    precede it."""
    earlier = Window.partitionBy("_source_file").orderBy("_split_start").rowsBetween(
        Window.unboundedPreceding, -1
    )
    return per_split.select(
        "*", F.coalesce(F.sum("_split_lines").over(earlier), F.lit(0)).alias("_lines_before"),
    )


def split_offsets(lines: DataFrame) -> DataFrame:
    """One row a file split: its first row id, its line count, how many lines of its file
    precede it, and its file's modification time.

    As small as the number of splits; the caller broadcasts it back onto the rows. (The job
    counts its splits with the batch's other counts: `batch_counts`.)
    """
    return with_lines_before(lines.groupBy(*SPLIT_KEYS).agg(*split_aggregates()))


# `jvm/src/foodtaster/jvm/SplitLineNumbers.java`: a row id's line in its file, by a binary search
# of the splits' first row ids. In place of a broadcast hash join on (file path, split start),
# which hashed a path a row and cost a Spark job in the valid write and in the suspects'
# judgement (docs/decisions/005-line-numbers-by-row-id.md).
SPLIT_LINE_NUMBERS_CLASS = "foodtaster.jvm.SplitLineNumbers"


def packed_splits(splits: Iterable[tuple[int, int, int]]) -> bytearray:
    """What `SplitLineNumbers` is built from: (first row id, line count, lines before) a
    split, as big-endian longs."""
    return bytearray(b"".join(struct.pack(">qqq", *split) for split in splits))


def split_line_numbers(spark: SparkSession, splits: Sequence[Row]) -> Column:
    """`_line_number` of each row from its `_row_id`, given the batch's file splits
    (`split_offsets`, collected): their first row ids, line counts and lines before them."""
    packed = packed_splits((r["_first_row_id"], r["_split_lines"], r["_lines_before"]) for r in splits)
    line_numbers = layers.jar_class(spark, SPLIT_LINE_NUMBERS_CLASS).function(packed)
    return ClassicColumn(line_numbers.apply(_to_seq(spark.sparkContext, [F.col("_row_id")], _to_java_column)))


def with_line_numbers(rows: DataFrame, splits: Sequence[Row], skipped: DataFrame | None = None) -> DataFrame:
    """Add `_line_number` (1-based, in the file) from the file splits (`split_offsets`,
    collected: one row a split), and drop `_split_start`.

    A row's line is found from its row id alone (`split_line_numbers`), with no join.
    `skipped` (`skipped_lines`) names the lines the reader skipped, so the lines after them
    keep their number in the file.
    """
    line_number = split_line_numbers(rows.sparkSession, splits)
    numbered = rows.withColumn("_line_number", line_number).drop("_split_start")
    if skipped is None:
        return numbered
    # The k-th line read comes after the j-th skipped line (line s_j) when s_j - j < k.
    after = F.filter("_read_before", lambda before: before < F.col("_line_number"))
    file_name = F.element_at(F.split("_source_file", "/"), -1)
    return (
        numbered.join(F.broadcast(skipped), file_name == F.col("_skipped_file"), "left")
        .withColumn("_line_number", F.col("_line_number") + F.coalesce(F.size(after), F.lit(0)))
        .drop("_skipped_file", "_read_before")
    )


def skipped_lines(spark: SparkSession, files: Sequence[LandedFile]) -> DataFrame | None:
    """From the manifest's files: one row a file with lines the reader skips (`_skipped_file`,
    `_read_before`: how many lines are read before each), or None when there are none."""
    rows = [
        (f.name, [line.line - j for j, line in enumerate(f.too_large, start=1)])
        for f in files if f.too_large
    ]
    if not rows:
        return None
    return spark.createDataFrame(rows, "_skipped_file string, _read_before array<long>")


def read_messages(spark: SparkSession, path: str, stream: str) -> DataFrame:
    """A broker batch's raw partition (`foodtaster.sources.nats`): one row a message, shaped as
    `read_lines` shapes a line, its lineage in the broker's words.

    `_source_file` is `nats://<stream>/<subject>` and `_line_number` the stream sequence;
    `_row_id` is the sequence too, so "first in order" means first in the stream.
    """
    return spark.read.parquet(path).select(
        F.col("payload").cast("string").alias("_text"),
        F.col("payload").alias("_raw"),
        F.concat(F.lit(f"nats://{stream}/"), F.col("subject")).alias("_source_file"),
        F.lit(0).cast("long").alias("_split_start"),
        F.col("published_at").alias("_modified_at"),
        F.col("stream_sequence").alias("_row_id"),
        F.col("stream_sequence").alias("_line_number"),
    )


KAFKA_PARTITION_SHIFT = 40  # a Kafka row id: the partition above the offset's 40 bits


def read_kafka_messages(spark: SparkSession, path: str) -> DataFrame:
    """A Kafka batch's raw partition (`foodtaster.sources.kafka`): one row a message, shaped as
    `read_lines` shapes a line, its lineage in Kafka's words.

    `_source_file` is `kafka://<topic>/<partition>` and `_line_number` the offset; `_row_id`
    the partition and the offset in one number (unique in the batch), so "first in order" means
    first in its partition, where Kafka keeps a key's messages in order.
    """
    return spark.read.parquet(path).select(
        F.col("payload").cast("string").alias("_text"),
        F.col("payload").alias("_raw"),
        F.concat(F.lit("kafka://"), F.col("topic"), F.lit("/"), F.col("partition").cast("string"))
        .alias("_source_file"),
        F.lit(0).cast("long").alias("_split_start"),
        F.col("timestamp").alias("_modified_at"),
        F.shiftleft(F.col("partition").cast("long"), KAFKA_PARTITION_SHIFT).bitwiseOR(F.col("offset"))
        .alias("_row_id"),
        F.col("offset").alias("_line_number"),
    )
