"""What a person reads: lake paths relative to the lake, values a person wrote quoted short,
lists as words. Used by the pages, the alerts and the Airflow tasks' log lines alike, so
no Python repr and no machine path reaches a person."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from foodtaster.lake_paths import relative_to_lake
from foodtaster.state.lake import Lake

QUOTED_CHARS = 40  # a value a person wrote is quoted back at most this long


def in_lake(lake: Lake | str, path: Any) -> str:
    """A path as a person reads it: relative to the lake root when under it, whatever form it
    was written in (`file:///root/...`, `file:/root/...`, `/root/...`), else as it is."""
    return relative_to_lake(str(path), lake.root if isinstance(lake, Lake) else str(lake))


def quoted(value: Any) -> str:
    """A value a person wrote, quoted back short, on one line, never a repr."""
    text = " ".join(str(value).split())
    if len(text) <= QUOTED_CHARS:
        return f'"{text}"'
    return f'"{text[:QUOTED_CHARS]}…" ({len(text)} characters)'


def words(items: Iterable[Any], empty: str = "none") -> str:
    """A list as a person reads it: `a, b, c`, or `empty`."""
    shown = [str(item) for item in items]
    return ", ".join(shown) if shown else empty
