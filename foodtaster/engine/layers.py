"""The bytes, parse and type layers: one call a line to the strict parser in the JVM.

`jvm/src/foodtaster/jvm/StrictLineParser.java` reads each line's exact bytes (so
invalid UTF-8 is its verdict too) with the Jackson that Spark ships, every
leniency off: no single quotes, NaN, comments, trailing commas, leading zeros,
duplicate keys at any depth, or a second value on the line. It returns the
line's bytes and parse reasons already in the reason shape (null for a line
that is one JSON object) and, for each contract field, its typed value, a
status (`FieldStatus`) and, for a wrong type or a number the column cannot hold,
the value's JSON text. The contract's field list travels as a literal argument,
so one registered class serves every dataset.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from enum import IntEnum

from py4j.java_gateway import JavaClass
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegerType, LongType, StringType, StructField, StructType

from foodtaster.engine.reasons import REASONS, VALUE_MAX_CHARS

TEXT = "_text"
LINE_REASONS = "_line_reasons"  # the bytes or parse reasons of a line; null for one JSON object
UDF_CLASS = "foodtaster.jvm.StrictLineUdf"
# One scan of an ISO-8601 text for its verdict and instant (`jvm/src/foodtaster/jvm/IsoTimestamp.java`),
# in place of a pattern match and Spark's string-to-timestamp cast, two passes over the text
# (docs/decisions/001-strict-parser-in-the-jvm.md).
ISO_TIMESTAMP_CLASS = "foodtaster.jvm.IsoTimestamp"
ISO_TIMESTAMP_FUNCTION = "foodtaster_iso_timestamp_micros"


class FieldStatus(IntEnum):
    """A contract field's JSON-type status, as `StrictLineParser` numbers it."""

    OK = 0
    MISSING = 1
    NULL = 2
    OUT_OF_RANGE = 3  # a number the typed column cannot hold (beyond int64, overflow, underflow)
    WRONG_TYPE = 10  # + the index of the JSON type found in FOUND_TYPES


FOUND_TYPES = ("a string", "an integer", "a non-integer number", "a boolean", "an object", "an array")


def status_column(field: str) -> str:
    return f"_s_{field}"


def text_column(field: str) -> str:
    return f"_x_{field}"


def value_column(field: str) -> str:
    return f"_t_{field}"


def spec(fields: Sequence[tuple[str, str, DataType]], max_message_bytes: int) -> str:
    """The parser's spec: `max_bytes=..;value_chars=..;fields=name:json_type,...`."""
    names = ",".join(f"{name}:{json_type}" for name, json_type, _ in fields)
    return f"max_bytes={max_message_bytes};value_chars={VALUE_MAX_CHARS};fields={names}"


def result_type(fields: Sequence[tuple[str, str, DataType]]) -> StructType:
    """The struct the parser returns: the line's reasons, then value, status, text a field."""
    columns = [StructField("reasons", REASONS, True)]
    for name, _, spark_type in fields:
        columns += [
            StructField(name, spark_type, True),
            StructField(f"{name}__status", IntegerType(), True),
            StructField(f"{name}__text", StringType(), True),
        ]
    return StructType(columns)


def _register(spark: SparkSession, returns: StructType) -> str:
    """Register the parser in this session, once a result shape, and `iso_timestamp`'s function;
    returns the parser's name."""
    digest = hashlib.sha1(returns.json().encode()).hexdigest()[:12]
    name = f"foodtaster_strict_line_{digest}"
    _register_java(spark, name, UDF_CLASS, returns)
    _register_java(spark, ISO_TIMESTAMP_FUNCTION, ISO_TIMESTAMP_CLASS, LongType())
    return name


def _register_java(spark: SparkSession, name: str, java_class: str, returns: DataType) -> None:
    """Register a class of the jar as the function `name` in this session, once."""
    if spark.catalog.functionExists(name):
        return
    try:
        spark.udf.registerJavaFunction(name, java_class, returns)
    except Exception as err:  # Py4J's error names the missing class deep in a Java trace
        if "ClassNotFoundException" in str(err) or "Can not load class" in str(err):
            raise _not_on_classpath(java_class) from err
        raise


def jar_class(spark: SparkSession, java_class: str) -> JavaClass:
    """A class of the jar, to call its static methods through Py4J; the same clear error as
    the registered functions' when the jar is not on Spark's classpath (Py4J would hand back
    a package of that name instead)."""
    found = spark._jvm
    for part in java_class.split("."):
        found = getattr(found, part)
    if not isinstance(found, JavaClass):
        raise _not_on_classpath(java_class)
    return found


def _not_on_classpath(java_class: str) -> RuntimeError:
    return RuntimeError(
        f"{java_class} (the strict line parser's jar) is not on Spark's classpath: build it "
        "(`make jar`) and start Spark with build_session, or pass "
        "`--jars build/foodtaster-jvm.jar` to spark-submit"
    )


def parse(lines: DataFrame, fields: Sequence[tuple[str, str, DataType]],
          max_message_bytes: int) -> DataFrame:
    """Lines (with `_raw`, their bytes) -> the same rows with `_line_reasons` and, a field, its
    value `_t_<f>`, status `_s_<f>` and offending JSON text `_x_<f>`; `_text` is dropped.

    `fields` are `(name, json_type, spark_type)`. The parser runs once a row: its result is
    one projection that the field columns read (Spark does not copy a UDF into every reader).
    """
    returns = result_type(fields)
    name = _register(lines.sparkSession, returns)
    call = F.call_function(name, F.col("_raw"), F.lit(spec(fields, max_message_bytes).encode()))
    keep = [c for c in lines.columns if c != TEXT]
    parsed = lines.select(*keep, call.alias("_parsed"))
    outputs = [F.col("_parsed.reasons").alias(LINE_REASONS)]
    for field, _, _ in fields:
        outputs += [
            F.col(f"_parsed.`{field}`").alias(value_column(field)),
            F.col(f"_parsed.`{field}__status`").alias(status_column(field)),
            F.col(f"_parsed.`{field}__text`").alias(text_column(field)),
        ]
    return parsed.select(*keep, *outputs)


def iso_timestamp(text: Column) -> Column:
    """The instant an ISO-8601 text with a zone names, as `foodtaster.checks.is_iso_timestamp`
    reads it (its shape, a real date and clock time), null where it names none. Reads rows from
    `parse`, which registers the function."""
    return F.timestamp_micros(F.call_function(ISO_TIMESTAMP_FUNCTION, text))


def line_failed() -> Column:
    """True where the bytes or the parse layer fails."""
    return F.col(LINE_REASONS).isNotNull()


def found_type(status: Column) -> Column:
    """The JSON type found, in words, from a wrong-type status."""
    found = F.lit(None).cast("string")
    for index, words in enumerate(FOUND_TYPES):
        found = F.when(status == FieldStatus.WRONG_TYPE + index, words).otherwise(found)
    return found
