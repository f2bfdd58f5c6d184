"""Spark's side of the tables: a batch's rows written as Parquet files an Iceberg table can
commit, and a snapshot's files read back (docs/decisions/027-iceberg-tables-write-audit-publish.md).

Spark has no Iceberg runtime here: it writes plain Parquet into a run's folder under the table's
location, with `batch_date` and `batch_id` in every row and timestamps as microseconds (Iceberg
refuses INT96 and nanoseconds); `foodtaster.state.publish` commits the files. Reading a table,
Spark is handed the files a snapshot holds, as pyiceberg lists them.
"""

from __future__ import annotations

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from foodtaster.contract.model import Contract
from foodtaster.state.tables import BATCH_DATE, BATCH_ID

TIMESTAMPS = "spark.sql.parquet.outputTimestampType"


def with_batch(rows: DataFrame, batch_date: str, batch_id: str) -> DataFrame:
    """The rows with the batch's `batch_date` (a date: the tables' partition) and `batch_id`."""
    return rows.select("*", F.lit(batch_date).cast("date").alias(BATCH_DATE), F.lit(batch_id).alias(BATCH_ID))


def arrow_schema(rows: DataFrame) -> pa.Schema:
    """The Arrow schema of what Spark will write: the table's schema is kept in step with it
    before anything is written (`DatasetTables.ensure`)."""
    return to_arrow_schema(rows.schema, error_on_duplicated_field_names_in_struct=True)


def required_fields(contract: Contract) -> list[tuple[str, ...]]:
    """The message's fields the contract requires, present and not null in every valid row, each
    as its keys: required and not nullable, with every declared object above it so too. A later
    contract that drops one is refused by the table (`DatasetTables.ensure`)."""
    scope = contract.scope
    found = []
    for rule in scope.fields:
        above = scope.declared_objects_above(rule.path)
        if all(r.required and not r.nullable for r in (*above, rule)) and all(
                isinstance(step, str) for step in rule.path.steps):
            found.append(tuple(rule.path.keys))
    return found


def write_files(rows: DataFrame, folder: str) -> list[str]:
    """Write the rows as Parquet into `folder` (a run's own) with timestamps in microseconds;
    returns the files that hold rows (Spark writes an empty one for no rows: left out)."""
    spark = rows.sparkSession
    before = spark.conf.get(TIMESTAMPS)
    spark.conf.set(TIMESTAMPS, "TIMESTAMP_MICROS")
    try:
        # no `_SUCCESS` marker: the catalog's commit, not a file, says the files are whole
        rows.write.mode("overwrite").option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false"
                                            ).parquet(folder)
    finally:
        spark.conf.set(TIMESTAMPS, before or "INT96")
    return files_with_rows(folder)


def files_with_rows(folder: str) -> list[str]:
    """The Parquet files of a folder that hold a row, as URIs, sorted."""
    fs, path = fsspec.core.url_to_fs(folder)
    found = []
    for name in sorted(fs.glob(f"{path}/*.parquet")):
        if name.rsplit("/", 1)[-1].startswith(("_", ".")):
            continue
        with fs.open(name, "rb") as handle:
            if pq.ParquetFile(handle).metadata.num_rows:
                found.append(fs.unstrip_protocol(name))
    return found


def read_files(spark: SparkSession, files: list[str], like: DataFrame | None = None) -> DataFrame | None:
    """A table's files as one DataFrame (columns a later contract added are null in older files);
    with no file, `like` with no rows, or None."""
    if not files:
        return None if like is None else like.limit(0)
    return spark.read.option("mergeSchema", "true").parquet(*files)
