"""Line numbers and exact bytes survive Spark splitting a file into many partitions."""

import gzip

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import IllegalArgumentException
from pyspark.sql import functions as F

from foodtaster.engine.batch import ingest
from foodtaster.engine.judging import layers


def _numbered(spark, path):
    lines = ingest.read_lines(spark, str(path))
    splits = ingest.split_offsets(lines).collect()
    return ingest.with_line_numbers(lines, splits).select(
        F.element_at(F.split("_source_file", "/"), -1).alias("file"), "_line_number", "_raw"
    )


def test_line_numbers_and_bytes_across_many_splits(spark, tmp_path):
    endings = [b"\n", b"\r\n", b"\r"]
    lines = [b'{"n": %d, "pad": "%s"}' % (i, b"x" * (i % 37)) for i in range(400)]
    lines[17] = b""  # an empty line keeps its place
    lines[18] = b"\xff\xfe not utf-8"
    body = b"".join(line + endings[i % 3] for i, line in enumerate(lines))
    (tmp_path / "a.jsonl").write_bytes(body)
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(b"\n".join(lines[:50])))  # no final newline

    spark.conf.set("spark.sql.files.maxPartitionBytes", "512")  # dozens of splits for a.jsonl
    try:
        assert ingest.read_lines(spark, str(tmp_path / "a.jsonl")).rdd.getNumPartitions() > 10
        rows = _numbered(spark, tmp_path).collect()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")

    got = {(r.file, r._line_number): bytes(r._raw) for r in rows}
    expected = {("a.jsonl", i + 1): line for i, line in enumerate(body.splitlines())}
    expected |= {("b.jsonl.gz", i + 1): line for i, line in enumerate(lines[:50])}
    assert len(rows) == len(expected) == 450
    assert got == expected


def test_source_file_is_spelled_as_on_disk(spark, tmp_path):
    names = ["with space+plus%41 é.jsonl", "plain+plus.jsonl"]  # the second needs no decoding
    for name in names:
        (tmp_path / name).write_bytes(b"1\n2\n")
    files = {r._source_file for r in ingest.read_lines(spark, str(tmp_path)).collect()}
    assert files == {f"file:{tmp_path}/{name}" for name in names}


def _split_line_numbers(spark, *splits):
    """`SplitLineNumbers` built as `ingest.split_line_numbers` builds it: (first row id, lines,
    lines before) a split."""
    return layers.jar_class(spark, ingest.SPLIT_LINE_NUMBERS_CLASS)(ingest.packed_splits(splits))


def test_split_line_numbers_finds_each_row_id_s_split_by_its_first_row_id(spark):
    task_1 = 1 << 33  # monotonically_increasing_id: a task's ids start at its index << 33
    numbers = _split_line_numbers(spark, (task_1 + 3, 2, 0), (0, 3, 10), (3, 1, 0), (task_1, 3, 5))
    expected = {0: 11, 2: 13, 3: 1, task_1: 6, task_1 + 2: 8, task_1 + 3: 1, task_1 + 4: 2}
    assert {row_id: numbers.lineNumber(row_id) for row_id in expected} == expected


@pytest.mark.parametrize("row_id", [-1, 4, (1 << 33) - 1])
def test_split_line_numbers_refuses_a_row_id_in_no_split(spark, row_id):
    numbers = _split_line_numbers(spark, (0, 4, 0), (1 << 33, 2, 7))
    numbers.lineNumber(1 << 33)
    with pytest.raises(Py4JJavaError, match=f"row id {row_id} is in none of the batch's 2 counted file"):
        numbers.lineNumber(row_id)


def test_split_line_numbers_refuses_splits_that_overlap(spark):
    with pytest.raises(IllegalArgumentException, match="splits at row ids 0 and 3 overlap"):
        _split_line_numbers(spark, (3, 2, 0), (0, 4, 0))
