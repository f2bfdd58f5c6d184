"""Land the inbox files of one run's interval as an immutable raw batch.

Landing is the only step that reads producers' files. It copies them into
`raw/<dataset>/batch_date=<d>/batch_id=<id>/` and writes `_manifest.json`
there, so the Spark job reads a fixed set of files whose bytes, sha256 and
line counts are known: the "nothing is lost" check compares against them.

Which inbox file went into which batch is kept in a bookmark in the lake
(`_state/landing/<dataset>/dt=<d>[/hour=<HH>]/bookmark.json`), keyed by the
file's path and sha256, like a consumer offset kept in the messaging system
itself: any worker can land any batch, a file is never landed into two
batches, and rerunning a batch rebuilds the same partition. One bookmark per
inbox partition, because only a run for that interval ever reads it, so runs
for different dates never race on it; two runs of the same date would (a read,
then a write), which is why the DAG lands one batch of a dataset at a time.

No Spark here: plain Python over fsspec, so any lake URI fsspec knows works.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import fsspec
import numpy as np

from foodtaster.logs import batch_logger
from foodtaster.registry import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES,
    DatasetConfig,
    line_read_bytes,
)
from foodtaster.state.lake import Lake, check_batch_id, check_date, exists, read_json, write_json

CHUNK_BYTES = 1024 * 1024  # read, hash, decompress and copy in pieces of this size
LINE_HEAD_BYTES = 1024  # how much of a line too long to read is kept, in the manifest and quarantine
NAME_MAX = 255  # bytes in one file name on Linux file systems
TOO_LARGE_RULE = "file.too_large"
MANIFEST = "_manifest.json"
UNREADABLE_DIR = "_unreadable"
UNREADABLE_RULE = "file.unreadable"  # the quarantine rule of a file that cannot be decompressed
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


class LandingError(RuntimeError):
    """A batch cannot be landed as recorded (a landed file is gone, or changed mid-copy)."""


class SupersedeError(LandingError):
    """New files for a held batch without a `_SUPERSEDES` marker: they would mix a poisoned
    delivery with its correction. The message says how to replace the delivery on purpose."""


SUPERSEDES = "_SUPERSEDES"  # marker in an inbox folder: its new files replace the batch's landed ones


@dataclass
class LandingResult:
    dataset: str
    batch_id: str
    batch_date: str
    raw_path: str  # Lake.raw(dataset, batch_date, batch_id)
    files: list[dict[str, Any]]  # manifest entries of the readable files in the batch
    unreadable: list[dict[str, Any]]  # files quarantined whole, with the reason
    messages: int  # lines in the readable files; an unreadable file adds none
    empty: bool  # the batch holds no file at all
    refused: list[dict[str, Any]] = field(default_factory=list)  # inbox entries never read (symlinks)
    superseded: dict[str, Any] | None = None  # this landing replaced a delivery: which, why, by whom

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def batch_id_for(date: str, hour: int | None = None) -> str:
    """The batch id of an interval: `YYYYMMDD`, or `YYYYMMDDHH` for an hourly run.

    Deterministic, so a retry, `airflow dags test` or a backfill of the same
    interval lands into the same batch instead of a new one.
    """
    check_date(date)
    if hour is not None and not 0 <= hour <= 23:
        raise ValueError(f"hour {hour!r} must be between 0 and 23")
    return check_batch_id(date.replace("-", "") + (f"{hour:02d}" if hour is not None else ""))


def land_batch(
    lake: Lake,
    dataset: str,
    date: str,
    batch_id: str | None = None,
    hour: int | None = None,
    now: datetime | None = None,
    limits: Limits | None = None,
) -> LandingResult:
    """Land the interval's inbox files that no other batch has taken into `batch_id`.

    Files this batch already holds stay in it; new files join it; files landed
    by another batch are skipped. A file that cannot be decompressed is copied
    under `_unreadable/` with the reason and does not stop the others. The
    manifest is written last and atomically: a partition without one was never
    landed. `now` (aware) is the landing time of a first landing; reruns keep it.
    A file over `limits.max_file_bytes` is quarantined whole like an unreadable one.
    Symlinks under the inbox (a file, or the `dt=` folder itself) are never followed:
    they are `refused`, logged, and land nothing.
    """
    limits = limits or Limits()
    batch_id = check_batch_id(batch_id or batch_id_for(date, hour))
    log = batch_logger(__name__, dataset, batch_id)
    inbox = lake.inbox(dataset, date, hour)
    inbox_rel = inbox.removeprefix(lake.root.rstrip("/") + "/")
    raw_path = lake.raw(dataset, date, batch_id)
    bookmark_uri = lake.state("landing", dataset, *inbox_rel.split("/")[2:], "bookmark.json")
    claims: list[dict[str, Any]] = read_json(bookmark_uri)["landed"] if exists(bookmark_uri) else []

    mine = [claim for claim in claims if claim["batch_id"] == batch_id and not claim.get("superseded")]
    fs, inbox_path = fsspec.core.url_to_fs(inbox)
    _, raw_fs_path = fsspec.core.url_to_fs(raw_path)
    manifest_uri = f"{raw_path}/{MANIFEST}"
    previous = read_json(manifest_uri) if exists(manifest_uri) else {}
    _check_same_batch(fs, raw_fs_path, inbox_rel, previous, mine)
    new, in_inbox, skipped, refused = _scan_inbox(fs, inbox_path, inbox_rel, claims, batch_id, limits)
    superseded = None
    if new and mine and _held(lake, dataset, batch_id):
        superseded = _supersede(fs, inbox_path, inbox_rel, dataset, batch_id, mine, new, now)
        mine = []  # the old delivery stays claimed (never landed again) but leaves the batch

    batch = sorted(mine + new, key=lambda claim: claim["name"])
    for claim in batch:
        _place(fs, claim, in_inbox.get((claim["source"], claim["sha256"])), raw_fs_path)
    if new:
        write_json(bookmark_uri, {"dataset": dataset, "inbox": inbox_rel, "landed": sorted(
            claims + new, key=lambda claim: (claim["batch_id"], claim["name"])
        )})
    _remove_strays(fs, raw_fs_path, {_landed_path(raw_fs_path, claim) for claim in batch})

    landed_at = previous.get("landed_at") or (now or datetime.now(UTC)).astimezone(UTC).isoformat()
    files = [_manifest_entry(claim, "lines") for claim in batch if "reason" not in claim]
    unreadable = [_manifest_entry(claim, "reason") for claim in batch if "reason" in claim]
    write_json(manifest_uri, {
        "dataset": dataset, "batch_id": batch_id, "batch_date": date, "hour": hour,
        "inbox": inbox_rel, "landed_at": landed_at, "files": files, "unreadable": unreadable,
        "superseded": previous.get("superseded", []) + ([superseded] if superseded else []),
    })
    if superseded:
        log.warning("event=delivery_superseded", fields={
            "replaced": [f["name"] for f in superseded["files"]], "why": superseded["why"],
            "by": superseded["by"]})

    for entry in unreadable:
        log.warning(
            "event=file_unreadable", fields={"file": entry["name"], "reason": entry["reason"]}
        )
    for entry in refused:
        log.warning("event=file_refused", fields=entry)
    result = LandingResult(
        dataset=dataset, batch_id=batch_id, batch_date=date, raw_path=raw_path,
        files=files, unreadable=unreadable, messages=sum(entry["lines"] for entry in files),
        empty=not batch, refused=refused, superseded=superseded,
    )
    log.event(
        "landed", files=len(files), unreadable=len(unreadable), messages=result.messages,
        new=len(new), skipped=skipped, refused=len(refused), raw_path=raw_path,
    )
    return result


def _held(lake: Lake, dataset: str, batch_id: str) -> bool:
    """The batch was judged and held (its summary says: not published)."""
    uri = lake.summary(dataset, batch_id)
    if not exists(uri):
        return False
    summary = read_json(uri)
    return not summary.get("published") and (summary.get("verdict") or {}).get("publish") is False


def _supersede(
    fs: fsspec.AbstractFileSystem, inbox_path: str, inbox_rel: str, dataset: str, batch_id: str,
    mine: list[dict[str, Any]], new: list[dict[str, Any]], now: datetime | None,
) -> dict[str, Any]:
    """New files for a held batch: with the inbox's `_SUPERSEDES` marker they replace its landed
    files (marked `superseded` in the bookmark, so never landed again); without it, refused."""
    marker = f"{inbox_path}/{SUPERSEDES}"
    old, arrived = sorted(c["name"] for c in mine), sorted(c["name"] for c in new)
    if not fs.exists(marker):
        raise SupersedeError(
            f"{dataset} batch {batch_id} was held and holds {old}; new files {arrived} arrived in "
            f"{inbox_rel}. Landing them would mix the poisoned delivery with its correction. To "
            f"replace the delivery, write {inbox_rel}/{SUPERSEDES} (JSON: {{\"why\": \"...\", "
            f"\"by\": \"...\"}}) and run the batch again; see docs/operations.md"
        )
    with fs.open(marker, "r", encoding="utf-8") as handle:
        text = handle.read().strip()
    try:
        said = json.loads(text) if text else {}
    except json.JSONDecodeError:
        said = {"why": text}
    if not isinstance(said, dict) or not str(said.get("why", "")).strip():
        raise SupersedeError(f"{inbox_rel}/{SUPERSEDES} must say why: JSON {{\"why\": \"...\"}}")
    at = (now or datetime.now(UTC)).astimezone(UTC).isoformat()
    for claim in mine:
        claim["superseded"] = at
    return {"at": at, "why": str(said["why"]).strip(), "by": str(said.get("by") or "unknown"),
            "files": [_manifest_entry(c, "reason" if "reason" in c else "lines") for c in mine],
            "by_files": arrived}


def _check_same_batch(
    fs: fsspec.AbstractFileSystem,
    raw_fs_path: str,
    inbox_rel: str,
    previous: dict[str, Any],
    mine: list[dict[str, Any]],
) -> None:
    """Refuse a rerun that would rebuild a landed batch from the wrong interval or a
    bookmark that lost its files: rebuilding would drop files the batch holds.

    Also refuse a batch id already used for another date: reports and the ledger
    are keyed by batch id alone.
    """
    folder, own = raw_fs_path.rsplit("/batch_date=", 1)
    for other in fs.glob(f"{folder}/batch_date=*/{own.split('/', 1)[1]}"):
        if other.rstrip("/") != raw_fs_path:
            raise LandingError(f"batch id already used by another date: {other}")
    if not previous:
        return
    if previous.get("inbox") != inbox_rel:
        raise LandingError(
            f"batch {previous['batch_id']} was landed from {previous.get('inbox')}, not "
            f"{inbox_rel}: rerun it for that date and hour (manifest 'batch_date', 'hour')"
        )
    landed = {entry["name"] for entry in previous["files"] + previous["unreadable"]}
    lost = landed - {claim["name"] for claim in mine}
    if lost:
        raise LandingError(
            f"batch {previous['batch_id']}: the landing bookmark no longer lists {sorted(lost)}, "
            "which its manifest holds; refusing to rebuild the batch without them"
        )


def _scan_inbox(
    fs: fsspec.AbstractFileSystem,
    inbox_path: str,
    inbox_rel: str,
    claims: list[dict[str, Any]],
    batch_id: str,
    limits: Limits,
) -> tuple[list[dict[str, Any]], dict[tuple[str, str], str], int, list[dict[str, Any]]]:
    """Inspect every inbox file; claim for `batch_id` those no batch has taken yet.

    Returns the new claims (named uniquely within the batch), where each
    inspected (source, sha256) lies in the inbox, how many files other
    batches had already taken, and the entries refused unread.
    """
    taken = {(claim["source"], claim["sha256"]): claim["batch_id"] for claim in claims}
    names = {claim["name"] for claim in claims if claim["batch_id"] == batch_id}
    new: list[dict[str, Any]] = []
    in_inbox: dict[tuple[str, str], str] = {}
    skipped = 0
    paths, refused = _inbox_files(fs, inbox_path, inbox_rel)
    for path in paths:
        name = posixpath.basename(path)
        entry = {"source": f"{inbox_rel}/{name}", **_inspect(fs, path, name, limits)}
        key = (entry["source"], entry["sha256"])
        in_inbox[key] = path
        if key not in taken:
            entry["name"] = _unique_name(_safe_name(name), entry["sha256"], names)
            names.add(entry["name"])
            new.append({**entry, "batch_id": batch_id})
        elif taken[key] != batch_id:
            skipped += 1
    return new, in_inbox, skipped, refused


SYMLINK = "a symlink: never followed, the inbox holds files only"


def _inbox_files(
    fs: fsspec.AbstractFileSystem, inbox_path: str, inbox_rel: str
) -> tuple[list[str], list[dict[str, str]]]:
    """The producers' finished files (`_` and `.` names are in-progress or markers), and the
    symlinks refused: a linked `dt=` folder would copy files from outside the inbox."""
    if not fs.exists(inbox_path):
        return [], []
    folders = inbox_rel.split("/")[2:]  # dt=<date>[/hour=<HH>], under inbox/<dataset>
    for up in reversed(range(len(folders))):  # dt= first, then hour=
        if fs.info(inbox_path.rsplit("/", up)[0]).get("islink"):
            return [], [{"source": inbox_rel.rsplit("/", up)[0], "reason": SYMLINK}]
    files, refused = [], []
    for info in fs.ls(inbox_path, detail=True):
        name = posixpath.basename(info["name"])
        if name.startswith(("_", ".")):
            continue
        if info.get("islink"):
            refused.append({"source": f"{inbox_rel}/{name}", "reason": SYMLINK})
        elif info["type"] == "file":
            files.append(info["name"])
    return sorted(files), sorted(refused, key=lambda entry: entry["source"])


def _inspect(
    fs: fsspec.AbstractFileSystem, path: str, name: str, limits: Limits
) -> dict[str, Any]:
    """sha256, size and lines in one pass; `reason` (and `rule`) instead of `lines` if it
    cannot be read or holds more than `limits.max_file_bytes`; `too_large`, the lines the
    Spark reader will skip, if any."""
    digest = hashlib.sha256()
    size = 0
    lines = _LineCounter(limits.line_bytes)
    gunzip = _Gunzip() if name.endswith(".gz") else None
    reason = rule = None
    with fs.open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
            if reason is not None:
                continue
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
    result: dict[str, Any] = {"sha256": digest.hexdigest(), "bytes": size}
    if reason is None:
        result["lines"] = lines.total()
        if skipped := lines.skipped():
            result["too_large"] = skipped
    else:
        result["reason"] = reason
        if rule:
            result["rule"] = rule
    return result


class _LineCounter:
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
        self._skipped: list[dict[str, Any]] = []

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
        if self._ended_by_cr is not None:
            self._close(self._ended_by_cr, 1)
            self._ended_by_cr = None
        if self._open.length:
            self._open.number = self._terminators + 1
            self._close(self._open, 0)
            self._open = _OpenLine()
        return self._terminators + (self._last not in (b"", b"\n", b"\r"))

    def skipped(self) -> list[dict[str, Any]]:
        return sorted(self._skipped, key=lambda line: line["line"])


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

    def record(self) -> dict[str, Any]:
        digest = self._digest or hashlib.sha256(self._kept)
        return {
            "line": self.number, "bytes": self.length, "sha256": digest.hexdigest(),
            "head": base64.b64encode(bytes(self._kept[:LINE_HEAD_BYTES])).decode("ascii"),
        }


class _Gunzip:
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


def _safe_name(name: str) -> str:
    """The inbox name as Hadoop can read it: a `:` makes Spark fail the whole batch
    ("Relative path in absolute URI"), so it becomes `_`; the manifest keeps the inbox
    name as `source`."""
    return name.replace(":", "_")


def _unique_name(name: str, sha256: str, names: set[str]) -> str:
    """The inbox name, or (if the batch already holds that name with other bytes, because
    the producer rewrote the file) the name with a sha256 prefix before its extension,
    cut to stay within NAME_MAX."""
    if name not in names:
        return name
    stem, gz = (name[:-3], ".gz") if name.endswith(".gz") else (name, "")
    root, ext = posixpath.splitext(stem)
    tail = f"-{sha256[:12]}{ext}{gz}"
    room = NAME_MAX - len(tail.encode())
    return root.encode()[:room].decode("utf-8", errors="ignore") + tail


def _landed_path(raw_fs_path: str, claim: dict[str, Any]) -> str:
    folder = f"{raw_fs_path}/{UNREADABLE_DIR}" if "reason" in claim else raw_fs_path
    return f"{folder}/{claim['name']}"


def _place(
    fs: fsspec.AbstractFileSystem, claim: dict[str, Any], source: str | None, raw_fs_path: str
) -> None:
    """Make sure the batch's copy of a file is in place, copying it from the inbox if not.

    Copies go to a hidden name first (Spark skips `.` files), are checked against
    the sha256 the file was claimed with, then moved: a landed copy is never partial.
    """
    target = _landed_path(raw_fs_path, claim)
    if fs.exists(target) and fs.size(target) == claim["bytes"]:
        return
    if source is None:
        raise LandingError(
            f"batch {claim['batch_id']}: {claim['source']} (sha256 {claim['sha256']}) was landed "
            f"but its copy {target} is missing and the inbox no longer holds those bytes"
        )
    folder, name = target.rsplit("/", 1)
    staging = f"{folder}/.landing-{claim['sha256'][:12]}"  # within NAME_MAX, whatever the name
    fs.makedirs(folder, exist_ok=True)
    digest = hashlib.sha256()
    with fs.open(source, "rb") as reader, fs.open(staging, "wb") as writer:
        while chunk := reader.read(CHUNK_BYTES):
            digest.update(chunk)
            writer.write(chunk)
    if digest.hexdigest() != claim["sha256"]:
        fs.rm(staging)
        raise LandingError(f"{claim['source']} changed while it was being landed; rerun the batch")
    fs.mv(staging, target)


def _remove_strays(fs: fsspec.AbstractFileSystem, raw_fs_path: str, keep: set[str]) -> None:
    """Drop what a crashed landing left behind, so the partition holds exactly the batch."""
    if not fs.exists(raw_fs_path):
        return
    for path in fs.find(raw_fs_path):
        if path not in keep and path != f"{raw_fs_path}/{MANIFEST}":
            fs.rm(path)


def _manifest_entry(claim: dict[str, Any], outcome: str) -> dict[str, Any]:
    keys = ("name", "source", "bytes", "sha256", outcome, "rule", "too_large")
    return {key: claim[key] for key in keys if key in claim}
