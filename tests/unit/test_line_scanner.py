"""The line scanner: lines counted as Spark's reader splits them, long lines recorded, gzip
decompressed in bounded pieces, a file over its limit cut there."""

from __future__ import annotations

import base64
import gzip
import hashlib
import re

import pytest

from foodtaster.sources.lines import CHUNK_BYTES, LINE_HEAD_BYTES, Limits, LineCounter, scan
from foodtaster.sources.raw_batch import TOO_LARGE_RULE

LIMITS = Limits(max_file_bytes=10_000, line_bytes=100)


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[start:start + size] for start in range(0, len(data), size)]


def count(data: bytes, size: int = 7, line_bytes: int = 100) -> int:
    counter = LineCounter(line_bytes)
    for piece in pieces(data, size):
        counter.feed(piece)
    return counter.total()


@pytest.mark.parametrize(("data", "lines"), [
    (b"", 0),
    (b"a\nb\n", 2),
    (b"a\nb", 2),  # a last line without a terminator counts
    (b"a\r\nb\r\n", 2),
    (b"a\rb\r", 2),  # a lone \r ends a line, as Hadoop's LineReader has it
    (b"a\r\n\r\nb", 3),
    (b"\n\n\n", 3),  # empty lines are lines
    (b"a\n\nb\n", 3),
])
@pytest.mark.parametrize("size", [1, 2, 3, 1000])
def test_lines_are_counted_as_the_reader_splits_them(data: bytes, lines: int, size: int) -> None:
    assert count(data, size) == lines == len(data.splitlines())


def test_a_crlf_split_across_two_pieces_ends_one_line() -> None:
    counter = LineCounter(100)
    counter.feed(b"a\r")
    counter.feed(b"\nb\r\n")
    assert counter.total() == 2


def test_a_line_over_the_limit_keeps_its_number_size_sha256_and_head() -> None:
    long = bytes(range(256)) * (3 * LINE_HEAD_BYTES // 256)
    data = b"short\r\n" + long.replace(b"\n", b"n").replace(b"\r", b"r") + b"\r\nlast"
    long = data.splitlines()[1]
    limits = Limits(max_file_bytes=10_000, line_bytes=2 * LINE_HEAD_BYTES)
    found = scan(pieces(data, 64), gzipped=False, limits=limits)
    assert found.lines == 3 and found.reason is None
    (line,) = found.too_large
    assert (line.line, line.bytes) == (2, len(long))
    assert line.sha256 == hashlib.sha256(long).hexdigest()
    assert base64.b64decode(line.head) == long[:LINE_HEAD_BYTES]


def test_a_line_reaches_the_limit_with_its_terminator() -> None:
    """The reader skips a line whose bytes with the terminator reach the limit."""
    assert [line.line for line in scan([b"x" * 98 + b"\n"], False, LIMITS).too_large] == []
    assert [line.line for line in scan([b"x" * 99 + b"\n"], False, LIMITS).too_large] == [1]
    assert [line.line for line in scan([b"x" * 98 + b"\r\n"], False, LIMITS).too_large] == [1]
    assert [line.line for line in scan([b"x" * 100], False, LIMITS).too_large] == [1]


def test_the_sha256_and_size_are_of_the_bytes_as_stored() -> None:
    data = gzip.compress(b'{"a": 1}\n{"a": 2}\n')
    found = scan(pieces(data, 5), gzipped=True, limits=LIMITS)
    assert (found.sha256, found.bytes, found.lines) == (hashlib.sha256(data).hexdigest(), len(data), 2)


def test_concatenated_gzip_members_are_one_file() -> None:
    data = gzip.compress(b"a\nb\n") + gzip.compress(b"c\n")
    assert scan([data], gzipped=True, limits=LIMITS).lines == 3


def test_a_gzip_bomb_is_cut_at_the_file_limit() -> None:
    bomb = gzip.compress(b"\n" * (50 * CHUNK_BYTES))
    found = scan(pieces(bomb, 4096), gzipped=True, limits=Limits(max_file_bytes=4096, line_bytes=100))
    assert found.lines is None and found.rule == TOO_LARGE_RULE
    assert found.reason == "over 4096 bytes decompressed (max_file_bytes)"
    assert found.sha256 == hashlib.sha256(bomb).hexdigest() and found.bytes == len(bomb)


def test_a_plain_file_over_the_limit_is_too_large() -> None:
    found = scan([b"a\n" * 3000], gzipped=False, limits=Limits(max_file_bytes=4096, line_bytes=100))
    assert (found.lines, found.rule) == (None, TOO_LARGE_RULE)
    assert found.reason == "over 4096 bytes (max_file_bytes)"


def test_corrupt_and_truncated_gzip_say_why() -> None:
    corrupt = scan([b"\x1f\x8b\x08\x00not really gzip at all"], gzipped=True, limits=LIMITS)
    assert corrupt.lines is None and corrupt.reason.startswith("corrupt gzip: ") and corrupt.rule is None
    whole = gzip.compress(b"a\n" * 100)
    truncated = scan([whole[: len(whole) // 2]], gzipped=True, limits=LIMITS)
    assert truncated.reason == "truncated gzip: the file ends inside a compressed member"


def _reader_skips(data: bytes, limit: int) -> list[tuple[int, int]]:
    """(line, bytes) of the lines Hadoop's LineRecordReader skips, by its own rule: the
    line's bytes with its terminator reach the limit."""
    skipped, number, pos = [], 0, 0
    for match in re.finditer(rb"\r\n|\r|\n", data):
        number += 1
        if match.end() - pos >= limit:
            skipped.append((number, match.start() - pos))
        pos = match.end()
    if pos < len(data) and len(data) - pos >= limit:
        skipped.append((number + 1, len(data) - pos))
    return skipped


@pytest.mark.parametrize("piece", [1, 3, 7, 64, 10_000])
def test_landing_notes_exactly_the_lines_the_reader_skips(piece: int) -> None:
    limit = 13
    lines = [b"short", b"x" * 10, b"y" * 11, b"z" * 12, b"w" * 40, b"", b"v" * 13, b"u" * 9]
    data = b""
    for i, line in enumerate(lines):
        data += line + [b"\n", b"\r\n", b"\r"][i % 3]
    data += b"t" * 20  # a last line without a terminator
    counter = LineCounter(limit)
    for start in range(0, len(data), piece):
        counter.feed(data[start:start + piece])
    total = counter.total()
    assert total == len(data.splitlines())
    got = counter.skipped()
    assert [(s.line, s.bytes) for s in got] == _reader_skips(data, limit)
    assert [s.line for s in got] == [4, 5, 7, 9]
    by_line = dict(enumerate(data.splitlines(), start=1))
    for s in got:
        assert s.sha256 == hashlib.sha256(by_line[s.line]).hexdigest()
        assert by_line[s.line].startswith(base64.b64decode(s.head))
