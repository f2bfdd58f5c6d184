"""Line numbers and exact bytes survive Spark splitting a file into many partitions."""

import gzip

from pyspark.sql import functions as F

from foodtaster.engine import ingest


def _numbered(spark, path):
    lines = ingest.read_lines(spark, str(path))
    offsets = ingest.split_offsets(lines)
    return ingest.with_line_numbers(lines, offsets).select(
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
