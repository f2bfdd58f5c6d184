"""Where everything lies in the lake. One root, any local path or Hadoop/fsspec URI.

The folders: `inbox/` (producers' files), `raw/` (landed copies, immutable), `reports/` and
`_state/` (append-only event logs, the ledger). Valid rows and the quarantine are Iceberg tables
in a catalog (`foodtaster.state.tables`); the embedded catalog and its warehouse live in the lake
too, under `_catalog/` and `warehouse/`.
"""

from __future__ import annotations

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
        """`<zone>/<dataset>`: a dataset's folder of `inbox` or `raw`."""
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

    def runs(self, zone: str, dataset: str, batch_date: str, batch_id: str) -> str:
        """The folder of a batch's per-run work in `raw` (a hand run's landed files)."""
        return self._join(
            zone, dataset, "_runs", f"batch_date={check_date(batch_date)}",
            f"batch_id={check_batch_id(batch_id)}",
        )

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
