"""Where everything lies in the lake. One root, any local path or Hadoop/fsspec URI.

Spark ignores folders whose names start with "_" when it discovers partitions,
so staged valid rows under `valid/<dataset>/_staging/` stay invisible to
consumers until the batch is published.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

BATCH_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DATE_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_batch_id(batch_id: str) -> str:
    if not BATCH_ID_PATTERN.match(batch_id):
        raise ValueError(f"batch id {batch_id!r} must match {BATCH_ID_PATTERN.pattern}")
    return batch_id


def check_date(value: str) -> str:
    """A real calendar day as YYYY-MM-DD: `2026-13-45` would become a partition that makes
    Spark read `batch_date` as a string for the whole dataset."""
    if not DATE_PATTERN.match(value):
        raise ValueError(f"date {value!r} must be YYYY-MM-DD")
    try:
        date.fromisoformat(value)
    except ValueError as err:
        raise ValueError(f"date {value!r} is not a calendar day: {err}") from err
    return value


def check_run_id(run_id: str) -> str:
    if not BATCH_ID_PATTERN.match(run_id):
        raise ValueError(f"run id {run_id!r} must match {BATCH_ID_PATTERN.pattern}")
    return run_id


def run_id_from(text: str) -> str:
    """A run id from any text (an Airflow run id like `manual__2026-11-20T00:00:00+00:00`)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.-")[:64]
    return check_run_id(cleaned or "run")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


@dataclass(frozen=True)
class Lake:
    root: str

    def _join(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def zone(self, zone: str, dataset: str) -> str:
        """`<zone>/<dataset>`: every partition of a dataset in `raw`, `valid` or `quarantine`."""
        return self._join(zone, dataset)

    def inbox(self, dataset: str, date: str, hour: int | None = None) -> str:
        parts = [f"dt={check_date(date)}"] + ([f"hour={hour:02d}"] if hour is not None else [])
        return self._join("inbox", dataset, *parts)

    def _batch(self, zone: str, dataset: str, batch_date: str, batch_id: str) -> str:
        return self._join(
            zone, dataset, f"batch_date={check_date(batch_date)}", f"batch_id={check_batch_id(batch_id)}"
        )

    def raw(self, dataset: str, batch_date: str, batch_id: str) -> str:
        return self._batch("raw", dataset, batch_date, batch_id)

    def valid(self, dataset: str, batch_date: str, batch_id: str) -> str:
        return self._batch("valid", dataset, batch_date, batch_id)

    def staged_valid(self, dataset: str, batch_date: str, batch_id: str) -> str:
        return self._join(
            "valid", dataset, "_staging",
            f"batch_date={check_date(batch_date)}", f"batch_id={check_batch_id(batch_id)}",
        )

    def quarantine(self, dataset: str, batch_date: str, batch_id: str) -> str:
        return self._batch("quarantine", dataset, batch_date, batch_id)

    def runs(self, zone: str, dataset: str, batch_date: str, batch_id: str) -> str:
        """The folder of a batch's per-run `valid` or `quarantine` outputs (`run_output`)."""
        return self._join(
            zone, dataset, "_runs", f"batch_date={check_date(batch_date)}",
            f"batch_id={check_batch_id(batch_id)}",
        )

    def run_output(self, zone: str, dataset: str, batch_date: str, batch_id: str, run_id: str) -> str:
        """Where one run writes its `valid` or `quarantine` rows before they are swapped in:
        a path of its own, so two runs of a batch never write over each other."""
        return self.runs(zone, dataset, batch_date, batch_id) + f"/run={check_run_id(run_id)}"

    def report(self, dataset: str, batch_id: str) -> str:
        return self._join("reports", dataset, check_batch_id(batch_id))

    def summary(self, dataset: str, batch_id: str) -> str:
        return self.report(dataset, batch_id) + "/summary.json"

    def state(self, *parts: str) -> str:
        return self._join("_state", *parts)


def write_text(uri: str, text: str) -> None:
    """Write a file so that a reader never sees half of it: write aside, then move."""
    fs, path = fsspec.core.url_to_fs(uri)
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    tmp = f"{path}.tmp"
    with fs.open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    fs.mv(tmp, path)


def write_json(uri: str, document: Any) -> None:
    write_text(uri, json.dumps(document, indent=2, sort_keys=True, default=str))


def read_json(uri: str) -> Any:
    fs, path = fsspec.core.url_to_fs(uri)
    with fs.open(path, "r") as handle:
        return json.load(handle)


def exists(uri: str) -> bool:
    fs, path = fsspec.core.url_to_fs(uri)
    return fs.exists(path)


def swap_in(source: str, target: str) -> None:
    """Put the finished folder `source` at `target`, atomically for a reader where the file
    system allows it; what was at `target` is then at `source`, for the caller to delete.

    On a local disk, Linux's renameat2(RENAME_EXCHANGE) swaps the two folders in one step, so
    a reader sees the old folder or the new one, never neither. Elsewhere (object stores, or
    a file system without the call) the old folder is moved aside, then the new one in: between
    the two moves a reader finds no folder at `target`.
    """
    fs, src = fsspec.core.url_to_fs(source)
    _, dst = fsspec.core.url_to_fs(target)
    fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
    if not fs.exists(dst):
        fs.mv(src, dst, recursive=True)
        return
    if isinstance(fs, LocalFileSystem) and _exchange(src, dst):
        return
    aside = f"{src}.old"
    fs.mv(dst, aside, recursive=True)
    fault_point("swap_aside")
    fs.mv(src, dst, recursive=True)
    fs.mv(aside, src, recursive=True)


_RENAME_EXCHANGE, _AT_FDCWD = 2, -100


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (renameat2, glibc >= 2.28); False where unsupported."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EXDEV):  # this file system cannot exchange
        return False
    raise OSError(err, f"renameat2 exchange of {a} and {b}: {os.strerror(err)}")


FAULT_AT_ENV, FAULT_DIR_ENV = "FOODTASTER_FAULT_AT", "FOODTASTER_FAULT_DIR"
FAULT_WAIT_S = 300


def fault_point(step: str) -> None:
    """A moment a fault test can stop the job at: when FOODTASTER_FAULT_AT names `step`, write
    `<FOODTASTER_FAULT_DIR>/<step>.reached` and block until `<step>.go` appears (the test
    kills the process group, or lets it go on). Does nothing otherwise."""
    if os.environ.get(FAULT_AT_ENV) != step:
        return
    folder = Path(os.environ[FAULT_DIR_ENV])
    (folder / f"{step}.reached").write_text(str(os.getpid()))
    deadline = time.monotonic() + FAULT_WAIT_S
    while not (folder / f"{step}.go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def remove_dir(uri: str) -> None:
    fs, path = fsspec.core.url_to_fs(uri)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def remove_empty_parents(uri: str, levels: int) -> None:
    """Remove up to `levels` folders above `uri` that are left empty, nearest first.

    A folder another job writes into meanwhile is not empty, and rmdir refuses it.
    """
    fs, path = fsspec.core.url_to_fs(uri)
    for _ in range(levels):
        path = path.rstrip("/").rsplit("/", 1)[0]
        try:
            if not fs.isdir(path) or fs.ls(path, detail=False):
                return
            fs.rmdir(path)
        except OSError:  # written into between the two calls
            return
