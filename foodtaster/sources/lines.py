"""Count a file's lines as Spark will read them, from its bytes as they arrive.

Landing reads each producer's file once, in pieces: `scan` hashes the bytes, decompresses a
gzip file with bounded output (a gzip bomb costs at most the file limit), counts lines the
way Hadoop's LineReader splits them, and records the lines too long for the Spark reader,
which skips them, so the job can quarantine them. No file system and no Spark here.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from foodtaster.registry import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES,
    DatasetConfig,
    line_read_bytes,
)
from foodtaster.sources.raw_batch import TOO_LARGE_RULE, LongLine

CHUNK_BYTES = 1024 * 1024  # read, hash, decompress and copy in pieces of this size
LINE_HEAD_BYTES = 1024  # how much of a line too long to read is kept, in the manifest and quarantine
_GZIP_WBITS = 31  # zlib: expect a gzip header and trailer, check the CRC and length


@dataclass(frozen=True)
class Limits:
    """What landing holds one file to (`DatasetConfig.max_file_bytes` and `line_read_bytes`):
    bytes after decompression, and the line length at which the Spark reader skips a line."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    line_bytes: int = line_read_bytes(DEFAULT_MAX_MESSAGE_BYTES)

    @classmethod
    def of(cls, config: DatasetConfig) -> Limits:
        return cls(config.max_file_bytes, config.line_read_bytes)


@dataclass(frozen=True)
class Scan:
    """One file's bytes as landed, and either its lines or why it cannot be read."""

    sha256: str
    bytes: int  # as stored (compressed, if it is)
    lines: int | None  # None when `reason` says why the file cannot be read
    too_large: tuple[LongLine, ...] = ()  # the lines the Spark reader skips
    reason: str | None = None
    rule: str | None = None  # the quarantine rule when it is not `file.unreadable`


def scan(chunks: Iterable[bytes], gzipped: bool, limits: Limits) -> Scan:
    """sha256, size and lines in one pass over a file's pieces; a `reason` (and `rule`) instead
    of lines if it cannot be decompressed or holds more than `limits.max_file_bytes`."""
    digest = hashlib.sha256()
    size = 0
    lines = LineCounter(limits.line_bytes)
    gunzip = Gunzip() if gzipped else None
    reason = rule = None
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
        if reason is not None:
            continue  # still hashed: the sha256 names the bytes landed
        try:
            for piece in gunzip.feed(chunk) if gunzip else (chunk,):
                lines.feed(piece)
                if lines.bytes > limits.max_file_bytes:
                    # Decompressing stops here: a gzip bomb costs at most the cap.
                    reason, rule = (
                        f"over {limits.max_file_bytes} bytes"
                        + (" decompressed" if gunzip else "")
                        + " (max_file_bytes)", TOO_LARGE_RULE,
                    )
                    break
        except zlib.error as err:
            reason = f"corrupt gzip: {err}"
    if reason is None and gunzip is not None and gunzip.in_member:
        reason = "truncated gzip: the file ends inside a compressed member"
    if reason is not None:
        return Scan(digest.hexdigest(), size, None, reason=reason, rule=rule)
    total = lines.total()
    return Scan(digest.hexdigest(), size, total, too_large=tuple(lines.skipped()))


class LineCounter:
    """Counts lines as Hadoop's LineReader splits them, so counts match Spark's rows, and
    notes the lines its LineRecordReader skips.

    `\\n`, `\\r\\n` and `\\r` each end a line; a last line without a terminator
    counts; a trailing terminator does not add an empty line. The reader, given
    `mapreduce.input.linerecordreader.line.maxlength`, skips a line whose bytes with its
    terminator reach `line_bytes` (holding at most that many of them); those lines are
    recorded (1-based number, bytes, sha256, first bytes) for the job to quarantine.
    """

    def __init__(self, line_bytes: int) -> None:
        self._terminators = 0
        self._last = b""
        self._limit = line_bytes
        self.bytes = 0
        self._open = _OpenLine()  # the line not yet ended: its length, head and (if long) hash
        self._ended_by_cr: _OpenLine | None = None  # a long line ended by a \r: \r\n or not?
        self._skipped: list[LongLine] = []

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.bytes += len(data)
        starts_with_lf = data[:1] == b"\n"
        if self._ended_by_cr is not None:
            self._close(self._ended_by_cr, 2 if starts_with_lf else 1)
            self._ended_by_cr = None
        lines_before = self._terminators
        self._terminators += data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
        crlf_across = self._last == b"\r" and starts_with_lf
        if crlf_across:  # a \r\n split across two pieces
            self._terminators -= 1
        self._last = data[-1:]
        self._scan(data, lines_before, 1 if crlf_across else 0)

    def _scan(self, data: bytes, lines_before: int, start: int) -> None:
        """Find the lines of `data` that reach the limit; numpy keeps the common case (no long
        line) a few vector operations a piece."""
        arr = np.frombuffer(data, np.uint8)
        ends = np.flatnonzero((arr == 10) | (arr == 13))
        ends = ends[ends >= start]
        if ends.size == 0:
            self._open.extend(data[start:], self._limit)
            return
        first = int(ends[0])
        self._open.extend(data[start:first], self._limit)
        candidates = [(self._open, first)]
        gaps = np.flatnonzero(np.diff(ends) - 1 >= self._limit - 2)
        for i in gaps:
            line = _OpenLine()
            line.extend(data[ends[i] + 1:ends[i + 1]], self._limit)
            candidates.append((line, int(ends[i + 1])))
        for line, end in candidates:
            if line.length < self._limit - 2:
                continue
            line.number = lines_before + self._lines_in(data[start:end])
            if data[end:end + 1] == b"\r" and end + 1 == len(data):
                self._ended_by_cr = line
            else:
                self._close(line, 2 if data[end:end + 2] == b"\r\n" else 1)
        self._open = _OpenLine()
        self._open.extend(data[int(ends[-1]) + 1:], self._limit)

    @staticmethod
    def _lines_in(head: bytes) -> int:
        """The number, counted from the start of a piece, of the line that ends after `head`."""
        return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1

    def _close(self, line: _OpenLine, terminator: int) -> None:
        if line.length + terminator >= self._limit:
            self._skipped.append(line.record())

    def total(self) -> int:
        """The lines fed so far, the last one ended or not; call once the file is read."""
        if self._ended_by_cr is not None:
            self._close(self._ended_by_cr, 1)
            self._ended_by_cr = None
        if self._open.length:
            self._open.number = self._terminators + 1
            self._close(self._open, 0)
            self._open = _OpenLine()
        return self._terminators + (self._last not in (b"", b"\n", b"\r"))

    def skipped(self) -> list[LongLine]:
        """The lines the reader skips, by number; complete once `total` was called."""
        return sorted(self._skipped, key=lambda line: line.line)


class _OpenLine:
    """A line being read: its length, its first bytes and, once it is long, its sha256."""

    def __init__(self) -> None:
        self.length = 0
        self.number = 0
        self._kept = bytearray()  # the whole line while it is short enough to be ordinary
        self._digest: Any = None

    def extend(self, data: bytes, limit: int) -> None:
        self.length += len(data)
        if self._digest is not None:
            self._digest.update(data)
            return
        self._kept += data
        if len(self._kept) >= limit:  # long: hash from here on, keep only the head
            self._digest = hashlib.sha256(self._kept)
            del self._kept[LINE_HEAD_BYTES:]

    def record(self) -> LongLine:
        digest = self._digest or hashlib.sha256(self._kept)
        return LongLine(
            line=self.number, bytes=self.length, sha256=digest.hexdigest(),
            head=base64.b64encode(bytes(self._kept[:LINE_HEAD_BYTES])).decode("ascii"),
        )


class Gunzip:
    """Incremental gzip decompression with bounded output per step (no zip-bomb blowup).

    Handles concatenated members, as gzip and Hadoop's codec do; `in_member`
    at the end of the input means the file was cut short.
    """

    def __init__(self) -> None:
        self._member = zlib.decompressobj(_GZIP_WBITS)
        self.in_member = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data or self.in_member:
            self.in_member = True
            out = self._member.decompress(data, CHUNK_BYTES)
            if out:
                yield out
            if self._member.eof:
                data = self._member.unused_data
                self._member = zlib.decompressobj(_GZIP_WBITS)
                self.in_member = False
            elif not (data := self._member.unconsumed_tail) and len(out) < CHUNK_BYTES:
                return
