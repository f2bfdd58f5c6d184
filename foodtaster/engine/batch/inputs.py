"""Reading a raw batch: its messages (lines of files, or a broker's Parquet rows), what its
landing manifest says, and what the landing would not hold whole.

A batch landed by a source (`foodtaster.sources`) has a `_manifest.json`, and so has a hand
run's plain folder, landed first (`foodtaster.sources.land_hand_run`) under the same limits;
a folder the job is pointed at directly has none.
"""

from __future__ import annotations

import base64
import urllib.parse
from datetime import UTC, datetime

import fsspec
from pyspark.sql import DataFrame, Row, SparkSession

from foodtaster.engine.batch import ingest
from foodtaster.errors import Failed
from foodtaster.registry import DatasetConfig
from foodtaster.rule_ids import LINE_TOO_LARGE
from foodtaster.sources.raw_batch import UNREADABLE_DIR, BrokerSource, KafkaOffsets, Manifest


class BatchChanged(Failed):
    """The files hold another number of lines than the landing counted."""


def read_manifest(input_path: str) -> Manifest | None:
    return Manifest.read(input_path)


def broker(manifest: Manifest | None) -> BrokerSource | KafkaOffsets | None:
    """The broker a batch was landed from (`foodtaster.sources`), or None for files."""
    return manifest.source if manifest is not None else None


def read_batch(spark: SparkSession, input_path: str, manifest: Manifest | None,
               config: DatasetConfig) -> DataFrame:
    """The batch's messages as the reader gives them, unnumbered: one row a line of its files,
    or one Parquet row a broker message (its lineage the broker's)."""
    landed_from = broker(manifest)
    if isinstance(landed_from, KafkaOffsets):
        return ingest.read_kafka_messages(spark, input_path)
    if landed_from:
        return ingest.read_messages(spark, input_path, landed_from.stream)
    # without a manifest nobody counted the lines the reader would skip: hold them all
    return ingest.read_lines(spark, input_path, config.line_read_bytes if manifest else None)


def skipped_lines(spark: SparkSession, manifest: Manifest | None) -> DataFrame | None:
    """The lines the reader skips (too large to read), as the landing listed them."""
    return ingest.skipped_lines(spark, manifest.files if manifest is not None else ())


def numbered_lines(spark: SparkSession, input_path: str, config: DatasetConfig) -> DataFrame:
    """The batch's messages with `_raw`, `_source_file` and `_line_number`, read as the job
    reads them, without judging them."""
    manifest = read_manifest(input_path)
    if broker(manifest):
        return read_batch(spark, input_path, manifest, config)
    lines = read_batch(spark, input_path, manifest, config)
    return ingest.with_line_numbers(lines, ingest.split_offsets(lines).collect(),
                                    skipped_lines(spark, manifest))


def too_large_lines(manifest: Manifest | None) -> int:
    return manifest.too_large if manifest is not None else 0


def unreadable_files(manifest: Manifest | None) -> int:
    return len(manifest.unreadable) if manifest is not None else 0


def check_lines_read(manifest: Manifest | None, lines_read: int, dataset: str, batch_id: str) -> None:
    """The landing counted every file's lines; reading fewer or more means the batch changed."""
    if manifest is None:
        return
    counted = manifest.lines
    if lines_read != counted:
        raise BatchChanged(
            f"{dataset} batch {batch_id}: the manifest lists {counted} lines but {lines_read} were read"
        )


def ingested_at(manifest: Manifest | None, split_rows: list[Row]) -> datetime:
    """When the batch landed: the manifest's time, else the newest input file's.

    Either is the same on a rerun, so rerunning a batch rewrites identical partitions.
    """
    if manifest is not None and manifest.landed_at:
        return datetime.fromisoformat(manifest.landed_at).astimezone(UTC)
    # PySpark gives a timestamp as the local time of its instant: .timestamp() is that instant.
    times = [int(row["_split_modified_at"].timestamp()) for row in split_rows
             if row["_split_modified_at"] is not None]
    return datetime.fromtimestamp(max(times, default=0), UTC)


def unread_items(
    spark: SparkSession, input_path: str, manifest: Manifest | None, config: DatasetConfig
) -> DataFrame | None:
    """The manifest's unreadable files and lines too large to read, as
    `judging.unreadable_rows` takes them, or None. Built on the driver (they are few) from
    bounded prefixes: a gzip bomb or a 300 MB line is never loaded whole."""
    if manifest is None:
        return None
    folder = input_path.rstrip("/")
    fs, fs_folder = fsspec.core.url_to_fs(folder)
    rows: list[tuple[str, int | None, bytearray, str, str]] = []
    for unreadable in manifest.unreadable:
        with fs.open(f"{fs_folder}/{UNREADABLE_DIR}/{unreadable.name}", "rb") as handle:
            head = handle.read(config.max_message_bytes)
        rows.append((_as_spark_spells(spark, f"{folder}/{UNREADABLE_DIR}/{unreadable.name}"), None,
                     bytearray(head), unreadable.rule, unreadable.reason))
    for landed in manifest.files:
        for line in landed.too_large:
            reason = (f"message is {line.bytes} bytes, over the limit of {config.max_message_bytes}; "
                      f"too large to read: the whole line (sha256 {line.sha256}) is in raw/")
            rows.append((_as_spark_spells(spark, f"{folder}/{landed.name}"), line.line,
                         bytearray(base64.b64decode(line.head)), LINE_TOO_LARGE, reason))
    if not rows:
        return None
    return spark.createDataFrame(rows, "path string, line long, content binary, rule string, reason string")


def _as_spark_spells(spark: SparkSession, path: str) -> str:
    """A path spelled as `ingest.read_lines` spells `_source_file` (qualified, as on disk)."""
    jvm = spark._jvm
    if jvm is None:  # Spark Connect: no gateway to Hadoop's FileSystem
        raise RuntimeError("the validation job needs a classic Spark session, not Spark Connect")
    jvm_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = jvm_path.getFileSystem(spark._jsc.hadoopConfiguration())
    return urllib.parse.unquote(fs.makeQualified(jvm_path).toUri().toString())
