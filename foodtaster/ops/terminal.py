"""What the `foodtaster` command prints: tables, JSON lines and text safe in a terminal, and
the lake and dataset a command names."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

CELL_CHARS = 60  # a table cell is cut to this many characters


def dataset_and_lake(args: argparse.Namespace) -> tuple[Any, str]:
    from foodtaster.lake_paths import lake_root
    from foodtaster.registry import RegistryError, load_registry
    from foodtaster.state.lake import Lake

    dataset = args.dataset
    if dataset is None:
        known = sorted(load_registry())
        if len(known) != 1:
            raise RegistryError(f"the registry has {len(known)} datasets {known}: give --dataset")
        dataset = known[0]
    return Lake(args.lake or lake_root()), dataset


def printable(data: bytes | str) -> str:
    """Text safe in a terminal: invalid UTF-8 as \\xNN, control characters escaped (no ESC
    sequence from a message ever reaches the terminal)."""
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="backslashreplace")
    return "".join(ch if ch.isprintable() or ch == " " else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    if ch in "\t\n\r":
        return repr(ch)[1:-1]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def file_name(uri: str) -> str:
    return printable(uri.rsplit("/", 1)[-1])


def table_lines(
    columns: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] | set[int] = frozenset()
) -> list[str]:
    table = [tuple(columns), *(tuple(cut(str(c), CELL_CHARS) for c in row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in table]


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str,
                 right: frozenset[int] | set[int] = frozenset()) -> None:
    print("\n".join(table_lines(columns, rows, right)) if rows else empty)


def json_lines(records: Sequence[dict[str, Any]]) -> None:
    for record in records:
        print(json.dumps(record, sort_keys=True, default=str))
