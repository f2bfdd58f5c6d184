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


def batch_frame(spark, lake, dataset: str, zone: str, batch_id: str, ref: str = "main"):
    """A batch's rows in a table (`valid` or `quarantine`) as `ref` holds them (main; an audit
    branch `audit-<batch>` for a batch not published), read by Spark from the files the snapshot
    lists, without the tables' `batch_date` and `batch_id` columns. Fails when `ref` holds none."""
    from foodtaster.state.tables import DatasetTables

    found = DatasetTables(lake, dataset).batch(zone, batch_id, ref)
    assert found is not None, f"{zone} table of {dataset} holds no row of batch {batch_id} on {ref}"
    return spark.read.option("mergeSchema", "true").parquet(*found.files).drop("batch_date", "batch_id")


def table_frame(spark, lake, dataset: str, zone: str, ref: str = "main"):
    """Every row of a table on `ref`, with `batch_date` and `batch_id`."""
    from foodtaster.state.tables import DatasetTables

    files = DatasetTables(lake, dataset).files(zone, ref=ref)
    assert files, f"{zone} table of {dataset} holds no row on {ref}"
    return spark.read.option("mergeSchema", "true").parquet(*files)
