"""Where everything lies in the lake. One root, any local path or Hadoop/fsspec URI.

Spark ignores folders whose names start with "_" when it discovers partitions,
so staged valid rows under `valid/<dataset>/_staging/` stay invisible to
consumers until the batch is published.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
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


@dataclass(frozen=True)
class Lake:
    root: str

    def _join(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

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


def replace_dir(source: str, target: str) -> None:
    """Move a finished partition folder over its target, replacing what was there."""
    fs, src = fsspec.core.url_to_fs(source)
    _, dst = fsspec.core.url_to_fs(target)
    if fs.exists(dst):
        fs.rm(dst, recursive=True)
    fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
    fs.mv(src, dst, recursive=True)


def remove_dir(uri: str) -> None:
    fs, path = fsspec.core.url_to_fs(uri)
    if fs.exists(path):
        fs.rm(path, recursive=True)
