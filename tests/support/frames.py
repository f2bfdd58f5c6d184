"""Small DataFrames for the engine's tests on the session's local Spark (the `spark` fixture)."""

from __future__ import annotations


def lines_frame(spark, lines: list[bytes], source_file: str = "file:/batch/part-0.jsonl"):
    """A tiny DataFrame shaped like `ingest.read_lines` output, from exact line bytes."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        [(i, bytearray(line)) for i, line in enumerate(lines)], "_row_id long, _raw binary"
    )
    return frame.select(
        F.col("_raw").cast("string").alias("_text"),
        "_raw",
        F.lit(source_file).alias("_source_file"),
        F.lit(0).cast("long").alias("_split_start"),
        F.lit("2026-11-20 00:00:00").cast("timestamp").alias("_modified_at"),
        "_row_id",
    )
