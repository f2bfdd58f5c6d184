"""A lake path as a person reads it: relative to the lake root, whatever form it was written in.
Shared by the log lines (`foodtaster.logs`), the pages and the alerts (`foodtaster.ops.shown`)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_LAKE = Path(__file__).resolve().parent.parent / "data" / "lake"


def lake_root() -> str:
    """The lake root: FOODTASTER_LAKE (a path or any Hadoop/fsspec URI), else ./data/lake."""
    return os.environ.get("FOODTASTER_LAKE") or str(DEFAULT_LAKE)


def relative_to_lake(path: str, root: str | None = None) -> str:
    """`path` relative to the lake root (`root`, else the deployment's: FOODTASTER_LAKE, else
    ./data/lake) when under it, whatever form it was written in (`file:///root/...`,
    `file:/root/...`, `/root/...`); else as it is."""
    def bare(uri: str) -> str:
        for scheme in ("file://", "file:"):
            if uri.startswith(scheme):
                return "/" + uri[len(scheme):].lstrip("/")
        return uri

    prefix = bare(root or lake_root()).rstrip("/") + "/"
    return bare(path)[len(prefix):] if bare(path).startswith(prefix) else path
