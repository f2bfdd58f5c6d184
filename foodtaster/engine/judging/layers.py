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

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from py4j.java_gateway import JavaClass
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, LongType, StringType, StructField, StructType

from foodtaster.contract.model import Key, PythonCheck
from foodtaster.contract.path import Path

TEXT = "_text"
LINE_REASONS = "_line_reasons"  # the bytes or parse reasons of a line; null for one JSON object
UDF_CLASS = "foodtaster.jvm.StrictLineUdf"
# One scan of an ISO-8601 text for its verdict and instant (`jvm/src/foodtaster/jvm/IsoTimestamp.java`),
# in place of a pattern match and Spark's string-to-timestamp cast, two passes over the text
# (docs/decisions/001-strict-parser-in-the-jvm.md).
ISO_TIMESTAMP_CLASS = "foodtaster.jvm.IsoTimestamp"
ISO_TIMESTAMP_FUNCTION = "foodtaster_iso_timestamp_micros"
# A printed path's pattern (`jvm/src/foodtaster/jvm/PathPattern.java`): drift counts kept unknown keys by it.
PATH_PATTERN_CLASS = "foodtaster.jvm.PathPattern"
PATH_PATTERN_FUNCTION = "foodtaster_path_pattern"


class FieldStatus(IntEnum):
    """A contract field's JSON-type status, as `StrictLineParser` numbers it."""

    OK = 0
    MISSING = 1
    NULL = 2
    OUT_OF_RANGE = 3  # a number its column cannot hold (beyond int64 or a double, a decimal's digits)
    INVALID = 4  # a string that names no calendar date
    UNJUDGED = 5  # under a value that is not an object: the parent's type is the reason
    WRONG_TYPE = 10  # + the index of the JSON type found in FOUND_TYPES


FOUND_TYPES = ("a string", "an integer", "a non-integer number", "a boolean", "an object", "an array")


# What the parser returns beside the slots: the paths (and their patterns) of unknown fields in
# a strict scope (`Config.strict = True`), and the unknown fields a scope keeps (`Config.strict = False`),
# each its path and JSON text as written.
UNEXPECTED = "_unexpected"
UNKNOWN = "_unknown"
UNEXPECTED_TYPE = ArrayType(StructType([StructField("path", StringType(), True),
                                        StructField("pattern", StringType(), True)]), True)
UNKNOWN_TYPE = ArrayType(StructType([StructField("path", StringType(), True),
                                     StructField("json", StringType(), True)]), True)


def column_name(path: Path) -> str:
    """A name for a Spark column of this path, one name a path: letters, digits and `_`
    only (Spark reads a dot in a name as a struct field), every other character and the
    separators escaped, so two paths never share a column."""
    parts = []
    for step in path.steps:
        if isinstance(step, int):
            parts.append(f"_I{step}")
        elif isinstance(step, str):
            parts.append("_K" + "".join(c if c.isalnum() and c.isascii() else f"_{ord(c):x}_" for c in step))
        else:  # every element
            parts.append("_E")
    return "".join(parts)


# A slot's parts in the parser's struct: its value, status and offending text; a judged
# array's verdict and written elements.
SLOT_PARTS = ("value", "status", "text", "passed", "written")


def slot_name(path: Path, part: str = "value") -> str:
    """A slot's field in the parser's struct (`parser_spec`), and in an element's struct."""
    if part not in SLOT_PARTS:
        raise ValueError(f"no slot part {part!r}; one of {', '.join(SLOT_PARTS)}")
    return column_name(path) + ("" if part == "value" else "__" + part)


def status_column(field: Path) -> str:
    return f"_s{column_name(field)}"


def text_column(field: Path) -> str:
    return f"_x{column_name(field)}"


def value_column(field: Path) -> str:
    return f"_t{column_name(field)}"


def passed_column(field: Path) -> str:
    """A judged array's verdict from the parser: every element passes (`parser_spec`)."""
    return f"_k{column_name(field)}"


def written_elements_column(field: Path) -> str:
    """A judged array's elements as written to valid/, from the parser (`parser_spec`)."""
    return f"_w{column_name(field)}"


def python_check_column(python_check: PythonCheck) -> str:
    """A Python check's verdict column: true passes, false fails, null not judged."""
    return f"_py_{column_name(python_check.path)}_{python_check.name}"


def named(name: str) -> Column:
    """A column by its exact name, a dot in it not read as a struct field (a top-level key
    `app.name` of a message is a column of that name)."""
    return F.col("`" + name.replace("`", "``") + "`")


def written_column(path: Path) -> Column:
    """The written column at a path through objects (`data.customer.email` in valid/): a key is
    a name, never split at a dot."""
    first, *rest = path.keys
    column = named(first)
    for key in rest:
        column = column.getField(key)
    return column


def key_column(key: Key, column_of: Callable[[Path], Column] = written_column) -> Column:
    """The key's value in a row: its field's typed value (`column_of` a path: the written column,
    or the parsed one); for a key of several fields, the JSON array of their values as text
    (`["DHL","1Z99"]`), null where one of them is null (a key with a missing part never repeats)."""
    if len(key.paths) == 1:
        return column_of(key.paths[0])
    parts = [column_of(p) for p in key.paths]
    complete = functools.reduce(lambda a, b: a & b, [c.isNotNull() for c in parts])
    return F.when(complete, F.to_json(F.array(*[c.cast("string") for c in parts])))


@dataclass(frozen=True)
class ParserInput:
    """What the parser is given for one contract (`parser_spec.parser_input`): its spec (JSON),
    the struct it returns, the message's slots, by path, in the struct's order, and the arrays
    whose elements it judges."""

    spec: str
    returns: StructType
    slots: tuple[Path, ...]
    judged: tuple[Path, ...] = ()


def _register(spark: SparkSession, returns: StructType) -> str:
    """Register the parser in this session, once a result shape, and `iso_timestamp`'s and the
    path pattern's functions; returns the parser's name."""
    digest = hashlib.sha1(returns.json().encode()).hexdigest()[:12]
    name = f"foodtaster_strict_line_{digest}"
    _register_java(spark, name, UDF_CLASS, returns)
    _register_java(spark, ISO_TIMESTAMP_FUNCTION, ISO_TIMESTAMP_CLASS, LongType())
    _register_java(spark, PATH_PATTERN_FUNCTION, PATH_PATTERN_CLASS, StringType())
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


def parse(lines: DataFrame, parser: ParserInput) -> DataFrame:
    """Lines (with `_raw`, their bytes) -> the same rows with `_line_reasons`, `_unexpected`,
    `_unknown` and, a slot, its value `_t<c>`, status `_s<c>` and offending JSON text
    `_x<c>` (`<c>` the slot's `column_name`), a judged array its verdict `_k<c>` and written
    elements `_w<c>`; `_text` is dropped.

    The parser runs once a row: its result is one projection that the slot columns read
    (Spark does not copy a UDF into every reader).
    """
    name = _register(lines.sparkSession, parser.returns)
    call = F.call_function(name, F.col("_raw"), F.lit(parser.spec.encode()))
    keep = [c for c in lines.columns if c != TEXT]
    parsed = lines.select(*keep, call.alias("_parsed"))
    result = F.col("_parsed")
    outputs = [result.getField("reasons").alias(LINE_REASONS),
               result.getField(UNEXPECTED).alias(UNEXPECTED), result.getField(UNKNOWN).alias(UNKNOWN)]
    for slot in parser.slots:
        outputs += [
            result.getField(slot_name(slot)).alias(value_column(slot)),
            result.getField(slot_name(slot, "status")).alias(status_column(slot)),
            result.getField(slot_name(slot, "text")).alias(text_column(slot)),
        ]
    for slot in parser.judged:
        outputs += [result.getField(slot_name(slot, "passed")).alias(passed_column(slot)),
                    result.getField(slot_name(slot, "written")).alias(written_elements_column(slot))]
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
