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

import hashlib
import posixpath
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import fsspec

from foodtaster.landing import LandingResult
from foodtaster.logs import batch_logger
from foodtaster.sources.lines import CHUNK_BYTES, Limits, scan
from foodtaster.sources.raw_batch import (
    MANIFEST,
    UNREADABLE_DIR,
    LandedFile,
    LandingError,
    Manifest,
    UnreadableFile,
    batch_id_for,
    file_from_dict,
    landing_result,
)
from foodtaster.sources.supersede import held, supersede
from foodtaster.state.lake import Lake, check_batch_id, exists, read_json, write_json
from foodtaster.state.publish import drop_staged
from foodtaster.state.tables import DatasetTables

NAME_MAX = 255  # bytes in one file name on Linux file systems


@dataclass(frozen=True)
class InboxSource:
    """The inbox folder `inbox/<dataset>/dt=<date>/` (hourly: `.../hour=<HH>/`) as a
    `foodtaster.sources.Source`, landed under the dataset's `limits`."""

    limits: Limits = field(default_factory=Limits)

    def land_batch(self, lake: Lake, dataset: str, date: str, batch_id: str | None = None,
                   hour: int | None = None) -> LandingResult:
        return land_batch(lake, dataset, date, batch_id=batch_id, hour=hour, limits=self.limits)

    def land_folder(self, folder: str, raw_path: str, dataset: str, batch_id: str, date: str) -> Manifest:
        """A hand run's file or folder, landed as an interval's files are (`land_folder`)."""
        return land_folder(folder, raw_path, dataset, batch_id, date, self.limits)


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
    previous = Manifest.read(raw_path)
    _check_same_batch(fs, raw_fs_path, inbox_rel, previous, mine)
    new, in_inbox, skipped, refused = _scan_inbox(fs, inbox_path, inbox_rel, claims, batch_id, limits)
    superseded = None
    if new and mine and held(lake, dataset, batch_id):
        superseded = supersede(fs, inbox_path, inbox_rel, dataset, batch_id, mine, new, now)
        mine = []  # the old delivery stays claimed (never landed again) but leaves the batch

    batch = sorted(mine + new, key=lambda claim: claim["name"])
    for claim in batch:
        _place(fs, claim, in_inbox.get((claim["source"], claim["sha256"])), raw_fs_path)
    if new:
        write_json(bookmark_uri, {"dataset": dataset, "inbox": inbox_rel, "landed": sorted(
            claims + new, key=lambda claim: (claim["batch_id"], claim["name"])
        )})
    _remove_strays(fs, raw_fs_path, {_landed_path(raw_fs_path, claim) for claim in batch})

    entries = [file_from_dict(claim) for claim in batch]
    manifest = Manifest(
        dataset=dataset, batch_id=batch_id, batch_date=date, hour=hour, inbox=inbox_rel,
        landed_at=(previous and previous.landed_at) or (now or datetime.now(UTC)).astimezone(UTC).isoformat(),
        files=tuple(entry for entry in entries if isinstance(entry, LandedFile)),
        unreadable=tuple(entry for entry in entries if isinstance(entry, UnreadableFile)),
        superseded=((previous and previous.superseded) or ()) + ((superseded,) if superseded else ()),
    )
    manifest.write(raw_path)
    if superseded:
        # The held delivery's valid rows leave with it: its audit branch is dropped (the rerun
        # stages the correction on a new one); main never held them.
        dropped = drop_staged(DatasetTables(lake, dataset), batch_id)
        log.warning("event=delivery_superseded", fields={
            "replaced": [entry.name for entry in superseded.files], "why": superseded.why,
            "by": superseded.by, "branch_dropped": dropped})

    for unreadable in manifest.unreadable:
        log.warning(
            "event=file_unreadable", fields={"file": unreadable.name, "reason": unreadable.reason}
        )
    for entry in refused:
        log.warning("event=file_refused", fields=entry)
    result = landing_result(manifest, raw_path, lake.root, refused=refused,
                            superseded=superseded)
    log.event(
        "landed", files=len(manifest.files), unreadable=len(manifest.unreadable),
        messages=result.messages, new=len(new), skipped=skipped, refused=len(refused),
        raw_path=raw_path,
    )
    return result


def _check_same_batch(
    fs: fsspec.AbstractFileSystem,
    raw_fs_path: str,
    inbox_rel: str,
    previous: Manifest | None,
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
    if previous is None:
        return
    if previous.inbox != inbox_rel:
        raise LandingError(
            f"batch {previous.batch_id} was landed from {previous.inbox}, not "
            f"{inbox_rel}: rerun it for that date and hour (manifest 'batch_date', 'hour')"
        )
    lost = previous.names - {claim["name"] for claim in mine}
    if lost:
        raise LandingError(
            f"batch {previous.batch_id}: the landing bookmark no longer lists {sorted(lost)}, "
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
    """The file's bytes, sha256 and lines (with `too_large`, the lines the Spark reader will
    skip, if any), or `reason` (and `rule`) instead of lines if it cannot be read."""
    with fs.open(path, "rb") as handle:
        found = scan(iter(lambda: handle.read(CHUNK_BYTES), b""), name.endswith(".gz"), limits)
    result: dict[str, Any] = {"sha256": found.sha256, "bytes": found.bytes}
    if found.reason is None:
        result["lines"] = found.lines
        if found.too_large:
            result["too_large"] = [line.as_dict() for line in found.too_large]
    else:
        result["reason"] = found.reason
        if found.rule:
            result["rule"] = found.rule
    return result


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
    fs: fsspec.AbstractFileSystem, claim: dict[str, Any], source: str | None, raw_fs_path: str,
    source_fs: fsspec.AbstractFileSystem | None = None,
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
    with (source_fs or fs).open(source, "rb") as reader, fs.open(staging, "wb") as writer:
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



def land_folder(source: str, raw_path: str, dataset: str, batch_id: str, date: str,
                limits: Limits) -> Manifest:
    """Land a file, or a folder's files, that no landing has seen (a hand run's `--input`)
    into `raw_path` under the same `limits` as `land_batch`: a file over `max_file_bytes`
    decompressed (a gzip bomb) lands under `_unreadable/`, a line too long to read is
    recorded in the manifest, so the job never holds either whole. No bookmark: the folder
    is not an inbox interval. `landed_at` is the newest file's time, the same on a rerun.
    """
    fs, source_path = fsspec.core.url_to_fs(source)
    raw_fs, raw_fs_path = fsspec.core.url_to_fs(raw_path)
    if raw_fs.exists(raw_fs_path):
        raw_fs.rm(raw_fs_path, recursive=True)  # an earlier hand run's copy: this run's files only
    if fs.isfile(source_path):
        paths = [source_path]
    else:
        paths = sorted(info["name"] for info in fs.ls(source_path, detail=True) if info["type"] == "file"
                       and not posixpath.basename(info["name"]).startswith(("_", ".")))
    claims: list[dict[str, Any]] = []
    names: set[str] = set()
    newest = 0.0
    for path in paths:
        name = posixpath.basename(path)
        claim = {"source": path, "batch_id": batch_id, **_inspect(fs, path, name, limits)}
        claim["name"] = _unique_name(_safe_name(name), claim["sha256"], names)
        names.add(claim["name"])
        _place(raw_fs, claim, path, raw_fs_path, source_fs=fs)
        claims.append(claim)
        newest = max(newest, _modified(fs.info(path)))
    entries = [file_from_dict(claim) for claim in claims]
    manifest = Manifest(
        dataset=dataset, batch_id=batch_id, batch_date=date, hour=None, inbox=source,
        landed_at=datetime.fromtimestamp(int(newest), UTC).isoformat(),  # as Spark reads file times
        files=tuple(entry for entry in entries if isinstance(entry, LandedFile)),
        unreadable=tuple(entry for entry in entries if isinstance(entry, UnreadableFile)),
    )
    manifest.write(raw_path)
    return manifest


def _modified(info: dict[str, Any]) -> float:
    """A file's modification time in seconds, as fsspec's file systems spell it."""
    modified = info.get("mtime", info.get("LastModified", info.get("updated", 0)))
    if isinstance(modified, datetime):
        return modified.timestamp()
    if isinstance(modified, str):
        return datetime.fromisoformat(modified.replace("Z", "+00:00")).timestamp()
    return float(modified or 0)
