"""Read a batch's files as lines with their exact bytes and lineage.

Spark's text source keeps each line's bytes as they were (no UTF-8 check), and
strips `\\n`, `\\r\\n` or `\\r`. Line numbers come from each row's place in its
file split: a split's first row id and its line offset in the file are computed
from a tiny per-split aggregate, never per row on the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

SPLIT_KEYS = ["_source_file", "_split_start"]


def read_lines(spark: SparkSession, path: str) -> DataFrame:
    """Every line under `path` (a file or a folder; `.gz` decompressed) with row ids.

    Columns: `_text` (the line as Spark reads it), `_raw` (its bytes), `_source_file`,
    `_split_start`, `_modified_at`, `_row_id` (increasing within a split).
    """
    return spark.read.text(path).select(
        F.col("value").alias("_text"),
        F.col("value").cast("binary").alias("_raw"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.col("_metadata.file_block_start").alias("_split_start"),
        F.col("_metadata.file_modification_time").alias("_modified_at"),
        F.monotonically_increasing_id().alias("_row_id"),
    )


def split_offsets(lines: DataFrame) -> DataFrame:
    """One row a file split: its first row id, its line count, how many lines of its file
    precede it, and its file's modification time.

    As small as the number of splits; the caller broadcasts it back onto the rows.
    """
    per_split = lines.groupBy(*SPLIT_KEYS).agg(
        F.min("_row_id").alias("_first_row_id"), F.count("*").alias("_split_lines"),
        F.max("_modified_at").alias("_split_modified_at"),
    )
    earlier = Window.partitionBy("_source_file").orderBy("_split_start").rowsBetween(
        Window.unboundedPreceding, -1
    )
    return per_split.select(
        *SPLIT_KEYS,
        "_first_row_id", "_split_lines", "_split_modified_at",
        F.coalesce(F.sum("_split_lines").over(earlier), F.lit(0)).alias("_lines_before"),
    )


def with_line_numbers(rows: DataFrame, offsets: DataFrame) -> DataFrame:
    """Add `_line_number` (1-based, in the file) from the split offsets."""
    return (
        rows.join(F.broadcast(offsets), SPLIT_KEYS)
        .withColumn(
            "_line_number",
            (F.col("_row_id") - F.col("_first_row_id") + F.col("_lines_before") + 1).cast("long"),
        )
        .drop("_first_row_id", "_lines_before", "_split_start", "_split_lines", "_split_modified_at")
    )


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
