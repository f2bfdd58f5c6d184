"""One writer a batch: a lease in the lake, `_state/locks/<dataset>/<batch_id>.json`.

The validation job holds it while it writes and commits a batch's rows, the publish task while
it publishes, a recall, a release and a compaction while they change the batch: a second run of
the same batch is refused with the holder's name (a refusal: the validate task fails at once, not
retried), never let to write beside the first. A lease whose holder died (same host, process
gone) or whose time ran out is taken over. `foodtaster tables maintain` leaves the files of a
batch with a live holder alone: they may be a run's, not yet committed.

On a local disk the lease file is created with O_EXCL and taken over by an atomic rename; on
other fsspec file systems creation is check-then-write, so two runs starting in the same
instant could both get it (each still writes in a folder of its own, and the catalog's guarded
commits never lose either's snapshot).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from foodtaster.errors import Busy
from foodtaster.state.lake import Lake, check_batch_id, read_json, write_json

DEFAULT_TTL = timedelta(hours=6)  # longer than any batch; a dead holder elsewhere blocks this long


class LeaseHeld(Busy):
    """Another live run holds the batch."""


def lease_uri(lake: Lake, dataset: str, batch_id: str) -> str:
    return lake.state("locks", dataset, f"{check_batch_id(batch_id)}.json")


@contextmanager
def batch_lease(
    lake: Lake, dataset: str, batch_id: str, run_id: str, ttl: timedelta = DEFAULT_TTL
) -> Iterator[dict[str, Any]]:
    """Hold the batch's lease for the block; raises LeaseHeld naming the live holder.

    Re-entrant within one process and run: the outermost hold releases it."""
    uri = lease_uri(lake, dataset, batch_id)
    now = datetime.now(UTC)
    holder = {
        "dataset": dataset, "batch_id": batch_id, "run_id": run_id, "host": socket.gethostname(),
        "pid": os.getpid(), "started": now.isoformat(), "expires": (now + ttl).isoformat(),
    }
    if not _create(uri, holder):
        current = _read(uri)
        if current and (current.get("run_id"), current.get("pid")) == (run_id, os.getpid()):
            yield current  # this process holds it already (the job's CLI, then run_batch)
            return
        if current is not None and not _stale(current):
            raise LeaseHeld(
                f"{dataset} batch {batch_id} is held by run {current.get('run_id')} "
                f"(host {current.get('host')}, pid {current.get('pid')}, since "
                f"{current.get('started')}, until {current.get('expires')}): not starting a "
                f"second run of it; retry when that run ends"
            )
        write_json(uri, holder)  # a take-over: write aside, then an atomic move
        if _read(uri) != holder:
            raise LeaseHeld(f"{dataset} batch {batch_id}: another run took over the stale lease first")
    try:
        yield holder
    finally:
        if (_read(uri) or {}).get("run_id") == run_id:
            fs, path = fsspec.core.url_to_fs(uri)
            fs.rm(path)


def live_holder(lake: Lake, dataset: str, batch_id: str) -> dict[str, Any] | None:
    """The live holder of a batch's lease, None when nobody holds it (or its holder is dead)."""
    current = _read(lease_uri(lake, dataset, batch_id))
    return current if current is not None and not _stale(current) else None


def _create(uri: str, holder: dict[str, Any]) -> bool:
    fs, path = fsspec.core.url_to_fs(uri)
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    text = json.dumps(holder, indent=2, sort_keys=True)
    if isinstance(fs, LocalFileSystem):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return True
    if fs.exists(path):
        return False
    write_json(uri, holder)
    return True


def _read(uri: str) -> dict[str, Any] | None:
    try:
        return read_json(uri)
    except (FileNotFoundError, json.JSONDecodeError):  # released, or a holder killed mid-write
        return None


def _stale(holder: dict[str, Any]) -> bool:
    """The holder is gone: its time ran out, or it ran on this host and its process is dead."""
    if datetime.fromisoformat(holder["expires"]) <= datetime.now(UTC):
        return True
    if holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False
