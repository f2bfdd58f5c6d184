"""A lake path as a person reads it: relative to the lake root, whatever form it was written in.
Shared by the log lines (`foodtaster.logs`), the pages and the alerts (`foodtaster.ops.shown`)."""

from __future__ import annotations


def relative_to_lake(path: str, root: str | None = None) -> str:
    """`path` relative to the lake root (`root`, else the deployment's: FOODTASTER_LAKE, else
    ./data/lake) when under it, whatever form it was written in (`file:///root/...`,
    `file:/root/...`, `/root/...`); else as it is."""
    from foodtaster.registry import lake_root

    def bare(uri: str) -> str:
        for scheme in ("file://", "file:"):
            if uri.startswith(scheme):
                return "/" + uri[len(scheme):].lstrip("/")
        return uri

    prefix = bare(root or lake_root()).rstrip("/") + "/"
    return bare(path)[len(prefix):] if bare(path).startswith(prefix) else path
