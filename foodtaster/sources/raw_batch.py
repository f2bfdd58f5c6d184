"""The raw batch every source lands: its id, its manifest and what a landing reports.

A source lands one run's interval into `raw/<dataset>/batch_date=<d>/batch_id=<id>/` and
writes `_manifest.json` there last: a partition without one was never landed. The manifest
lists each file with its bytes, sha256 and line count, which the job checks its reading
against, and the files that could not be read, which the job quarantines whole.

`Manifest` is that document as a typed value with one JSON form (`as_dict`/`from_dict`,
`read`/`write`), keyed as the manifests already in lakes are. No Spark here, and nothing of
the sources themselves: the inbox, the broker and the job all read this module.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from foodtaster import rule_ids
from foodtaster.errors import Failed
from foodtaster.landing import LandingResult
from foodtaster.state.lake import check_batch_id, check_date, exists, read_json, write_json

MANIFEST = "_manifest.json"
UNREADABLE_DIR = "_unreadable"  # under the raw partition: the files quarantined whole
UNREADABLE_RULE = rule_ids.FILE_UNREADABLE  # the quarantine rule of a file that cannot be decompressed
TOO_LARGE_RULE = rule_ids.FILE_TOO_LARGE  # ... and of a file over the dataset's max_file_bytes


class LandingError(Failed):
    """A batch cannot be landed as recorded (a landed file is gone, or changed mid-copy)."""


def batch_id_for(date: str, hour: int | None = None) -> str:
    """The batch id of an interval: `YYYYMMDD`, or `YYYYMMDDHH` for an hourly run.

    Deterministic, so a retry, `airflow dags test` or a backfill of the same
    interval lands into the same batch instead of a new one.
    """
    check_date(date)
    if hour is not None and not 0 <= hour <= 23:
        raise ValueError(f"hour {hour!r} must be between 0 and 23")
    return check_batch_id(date.replace("-", "") + (f"{hour:02d}" if hour is not None else ""))


@dataclass(frozen=True)
class LongLine:
    """A line the Spark reader skips as too long: the job quarantines it from this record."""

    line: int  # 1-based number in its file
    bytes: int
    sha256: str
    head: str  # its first bytes, base64

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> LongLine:
        return cls(line=entry["line"], bytes=entry["bytes"], sha256=entry["sha256"], head=entry["head"])


@dataclass(frozen=True)
class LandedFile:
    """A file of the batch the job reads: `lines` messages, of which `too_large` it cannot."""

    name: str  # in the raw partition
    lines: int
    source: str = ""  # where it came from: the inbox path, or `nats://<stream>/<subject>`
    bytes: int = 0  # as landed (compressed, if it is)
    sha256: str = ""
    too_large: tuple[LongLine, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.name, "source": self.source, "bytes": self.bytes, "sha256": self.sha256,
            "lines": self.lines,
        }
        if self.too_large:
            entry["too_large"] = [line.as_dict() for line in self.too_large]
        return entry

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> LandedFile:
        return cls(
            name=entry["name"], lines=entry["lines"], source=entry.get("source", ""),
            bytes=entry.get("bytes", 0), sha256=entry.get("sha256", ""),
            too_large=tuple(LongLine.from_dict(line) for line in entry.get("too_large", ())),
        )


@dataclass(frozen=True)
class UnreadableFile:
    """A file quarantined whole (under `_unreadable/`): it cannot be read, or is too large."""

    name: str
    reason: str
    rule: str = UNREADABLE_RULE
    source: str = ""
    bytes: int = 0
    sha256: str = ""

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.name, "source": self.source, "bytes": self.bytes, "sha256": self.sha256,
            "reason": self.reason,
        }
        if self.rule != UNREADABLE_RULE:  # manifests name only the rule that is not the default
            entry["rule"] = self.rule
        return entry

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> UnreadableFile:
        return cls(
            name=entry["name"], reason=entry["reason"], rule=entry.get("rule", UNREADABLE_RULE),
            source=entry.get("source", ""), bytes=entry.get("bytes", 0),
            sha256=entry.get("sha256", ""),
        )


def file_from_dict(entry: dict[str, Any]) -> LandedFile | UnreadableFile:
    """A manifest entry of either kind: an unreadable one says why."""
    return UnreadableFile.from_dict(entry) if "reason" in entry else LandedFile.from_dict(entry)


@dataclass(frozen=True)
class Supersession:
    """A held batch's delivery replaced by a correction (the inbox's `_SUPERSEDES` marker)."""

    at: str  # ISO time of the replacement
    why: str
    by: str
    files: tuple[LandedFile | UnreadableFile, ...]  # the replaced delivery
    by_files: tuple[str, ...]  # the inbox names that replaced it

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at, "why": self.why, "by": self.by,
                "files": [entry.as_dict() for entry in self.files], "by_files": list(self.by_files)}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> Supersession:
        return cls(at=entry["at"], why=entry["why"], by=entry["by"],
                   files=tuple(file_from_dict(f) for f in entry["files"]),
                   by_files=tuple(entry["by_files"]))


@dataclass(frozen=True)
class BrokerSource:
    """Where a broker's batch came from, and which stream sequences it holds."""

    kind: str
    url: str
    stream: str
    subject: str
    durable: str
    sequence_ranges: tuple[tuple[int, int], ...]  # first and last sequence, inclusive

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "stream": self.stream, "subject": self.subject,
                "durable": self.durable, "sequence_ranges": [list(r) for r in self.sequence_ranges]}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> BrokerSource:
        return cls(kind=entry["kind"], url=entry["url"], stream=entry["stream"],
                   subject=entry["subject"], durable=entry["durable"],
                   sequence_ranges=tuple((first, last) for first, last in entry["sequence_ranges"]))


@dataclass(frozen=True)
class OffsetRange:
    """Offsets `first` to `last` (inclusive) of one partition, read in one go: every message
    of the partition between them is in the batch (an offset missing there, a compacted
    message or a transaction marker, does not exist in the topic)."""

    partition: int
    first: int
    last: int

    def as_dict(self) -> dict[str, int]:
        return {"partition": self.partition, "first": self.first, "last": self.last}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> OffsetRange:
        return cls(partition=int(entry["partition"]), first=int(entry["first"]), last=int(entry["last"]))


@dataclass(frozen=True)
class KafkaOffsets:
    """Where a Kafka batch came from, and which offsets of which partitions it holds: the
    lake's record of what was landed, which the next landing seeks from."""

    topic: str
    group: str
    offset_ranges: tuple[OffsetRange, ...]
    kind: str = "kafka"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "group": self.group,
                "offset_ranges": [r.as_dict() for r in self.offset_ranges]}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> KafkaOffsets:
        return cls(topic=entry["topic"], group=entry["group"],
                   offset_ranges=tuple(OffsetRange.from_dict(r) for r in entry["offset_ranges"]))


def broker_source_from_dict(entry: dict[str, Any]) -> BrokerSource | KafkaOffsets:
    """A manifest's `source`, by its kind."""
    return KafkaOffsets.from_dict(entry) if entry.get("kind") == "kafka" else BrokerSource.from_dict(entry)


def write_durable(uri: str, data: bytes) -> None:
    """Write `data` so that it is on disk when this returns, or not there at all: a hidden
    copy beside it, fsynced, renamed into place, the folder fsynced (a local disk); on other
    fsspec file systems (object stores: durable once closed) written aside, then moved."""
    fs, path = fsspec.core.url_to_fs(uri)
    folder, name = path.rsplit("/", 1)
    fs.makedirs(folder, exist_ok=True)
    hidden = f"{folder}/.{name}.landing"
    if not isinstance(fs, LocalFileSystem):
        with fs.open(hidden, "wb") as handle:
            handle.write(data)
        fs.mv(hidden, path)
        return
    fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(hidden, path)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@dataclass(frozen=True)
class Manifest:
    """`_manifest.json` of a raw batch.

    `inbox` is the inbox folder an inbox landing read (None for a broker); `source` the broker
    a broker landing read (None for the inbox); `superseded` the deliveries an inbox batch
    replaced (None for a broker, whose manifest has no such key).
    """

    dataset: str
    batch_id: str
    batch_date: str
    hour: int | None
    inbox: str | None
    landed_at: str | None  # ISO time of the first landing; reruns keep it
    files: tuple[LandedFile, ...]
    unreadable: tuple[UnreadableFile, ...] = ()
    superseded: tuple[Supersession, ...] | None = None
    source: BrokerSource | KafkaOffsets | None = None

    @property
    def lines(self) -> int:
        """The messages the readable files hold, as landing counted them."""
        return sum(entry.lines for entry in self.files)

    @property
    def names(self) -> set[str]:
        """Every file the batch holds, readable or not."""
        return {entry.name for entry in self.files} | {entry.name for entry in self.unreadable}

    @property
    def too_large(self) -> int:
        """The lines the Spark reader skips as too long (each quarantined from the manifest)."""
        return sum(len(entry.too_large) for entry in self.files)

    def as_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "dataset": self.dataset, "batch_id": self.batch_id, "batch_date": self.batch_date,
            "hour": self.hour, "inbox": self.inbox, "landed_at": self.landed_at,
            "files": [entry.as_dict() for entry in self.files],
            "unreadable": [entry.as_dict() for entry in self.unreadable],
        }
        if self.superseded is not None:
            document["superseded"] = [entry.as_dict() for entry in self.superseded]
        if self.source is not None:
            document["source"] = self.source.as_dict()
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Manifest:
        """Also a partial manifest (a test's, an older lake's): what is missing is empty."""
        superseded = document.get("superseded")
        source = document.get("source")
        return cls(
            dataset=document.get("dataset", ""), batch_id=document.get("batch_id", ""),
            batch_date=document.get("batch_date", ""), hour=document.get("hour"),
            inbox=document.get("inbox"), landed_at=document.get("landed_at"),
            files=tuple(LandedFile.from_dict(entry) for entry in document.get("files", ())),
            unreadable=tuple(UnreadableFile.from_dict(entry) for entry in document.get("unreadable", ())),
            superseded=None if superseded is None else tuple(Supersession.from_dict(s) for s in superseded),
            source=broker_source_from_dict(source) if source else None,
        )

    @classmethod
    def read(cls, folder: str) -> Manifest | None:
        """The manifest of the raw batch at `folder`, or None if it has none (never landed, or
        a folder of files the job is pointed at directly)."""
        uri = f"{folder.rstrip('/')}/{MANIFEST}"
        return cls.from_dict(read_json(uri)) if exists(uri) else None

    def write(self, folder: str, durable: bool = False) -> None:
        """Written last by a landing: the partition counts as landed from here on. `durable`:
        on disk when this returns (`write_durable`), for a landing that commits a broker's
        offsets next."""
        uri = f"{folder.rstrip('/')}/{MANIFEST}"
        if durable:
            write_durable(uri, json.dumps(self.as_dict(), indent=2, sort_keys=True, default=str).encode())
        else:
            write_json(uri, self.as_dict())


def landing_result(manifest: Manifest, raw_path: str, lake: str, refused: list[dict[str, Any]] | None = None,
                   superseded: Supersession | None = None) -> LandingResult:
    """What a source reports of the batch it landed (`foodtaster.landing.LandingResult`)."""
    return LandingResult(
        dataset=manifest.dataset, batch_id=manifest.batch_id, batch_date=manifest.batch_date,
        raw_path=raw_path, files=[entry.as_dict() for entry in manifest.files],
        unreadable=[entry.as_dict() for entry in manifest.unreadable], messages=manifest.lines,
        empty=not (manifest.files or manifest.unreadable), refused=list(refused or []),
        superseded=superseded.as_dict() if superseded else None, lake=lake,
    )
