"""A first contract from sample messages: `foodtaster contract infer FILE.jsonl...`.

Reads a day of a producer's messages (JSON lines, `.gz` allowed) and proposes a JSON Schema
(2020-12) a new dataset can start from: each place's JSON types (an integer and a number seen
at one place: a number; a null seen: nullable), the keys seen in every object as `required`,
a small closed set of strings as an `enum`, a `format` every string at a place has (date-time,
date, uuid, email), arrays' `items`, nested objects' `properties`; `additionalProperties` left
open. What the sample cannot tell (a place only ever null, an array only ever empty, a line
that is no JSON object, an enum drawn from few values) is said in `Inferred.notes`, never
guessed silently. Pure: no Spark, no lake.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from foodtaster.contract.path import Path

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ENUM_MAX = 12  # at most this many distinct strings make an enum ...
ENUM_MIN_SEEN = 30  # ... seen at least this many times, each value at least twice
FORMATS = (  # the first a place's every string matches is its format (an annotation)
    ("date-time", re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")),
    ("date", re.compile(r"^\d{4}-\d{2}-\d{2}$")),
    ("uuid", re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")),
    ("email", re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")),
)


@dataclass
class Shape:
    """What the sample showed at one place: the JSON types seen, and per type what they held."""

    seen: int = 0
    types: Counter[str] = field(default_factory=Counter)
    objects: int = 0
    keys: dict[str, Shape] = field(default_factory=dict)
    present: Counter[str] = field(default_factory=Counter)
    items: Shape | None = None
    strings: Counter[str] = field(default_factory=Counter)  # capped at ENUM_MAX + 1 distinct
    many_strings: bool = False
    formats: set[str] | None = None  # the formats every string so far matched

    def add(self, value: Any) -> None:
        self.seen += 1
        kind = json_type(value)
        self.types[kind] += 1
        if kind == "object":
            self.objects += 1
            for key, inner in value.items():
                self.present[key] += 1
                self.keys.setdefault(key, Shape()).add(inner)
        elif kind == "array":
            self.items = self.items or Shape()
            for inner in value:
                self.items.add(inner)
        elif kind == "string":
            fits = {name for name, pattern in FORMATS if pattern.match(value)}
            self.formats = fits if self.formats is None else self.formats & fits
            if not self.many_strings:
                self.strings[value] += 1
                self.many_strings = len(self.strings) > ENUM_MAX


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@dataclass(frozen=True)
class Inferred:
    """The proposed schema, how many messages it was drawn from, and what it could not tell."""

    schema: dict[str, Any]
    messages: int
    notes: tuple[str, ...]


def infer(lines: Iterable[bytes], title: str = "Inferred") -> Inferred:
    """The schema the sample's JSON objects suggest; a line that is not one is noted, not used."""
    root, messages, skipped = Shape(), 0, Counter[str]()
    for raw in lines:
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested past Python's parser
            skipped["not JSON"] += 1
            continue
        if not isinstance(value, dict):
            skipped["not a JSON object"] += 1
            continue
        messages += 1
        root.add(value)
    notes = [f"{n} line(s) {why}: not used" for why, n in sorted(skipped.items())]
    if not messages:
        raise ValueError("no line of the sample is a JSON object: nothing to infer from")
    schema = {"$schema": DRAFT, "title": title, **_schema(root, Path(), notes)}
    schema["description"] = f"Inferred by `foodtaster contract infer` from {messages} messages; review it."
    return Inferred(schema, messages, tuple(notes))


def _schema(shape: Shape, at: Path, notes: list[str]) -> dict[str, Any]:
    where = str(at) or "the message"
    kinds = [k for k in shape.types if k != "null"]
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    if not kinds:
        notes.append(f"{where}: only null seen ({shape.seen} times): its type is not known")
        return {}
    out: dict[str, Any] = {}
    types = sorted(kinds) + (["null"] if "null" in shape.types else [])
    out["type"] = types[0] if len(types) == 1 else types
    if len(kinds) > 1:
        notes.append(f"{where}: several types seen ({', '.join(sorted(shape.types))}): kept as a union")
    if "object" in kinds:
        out["properties"] = {k: _schema(s, at.key(k), notes) for k, s in shape.keys.items()}
        required = [k for k in shape.keys if shape.present[k] == shape.objects]
        if required:
            out["required"] = required
    if "array" in kinds:
        items = shape.items
        if items is None or items.seen == 0:
            notes.append(f"{where}: every array seen was empty: its items are not known")
        else:
            out["items"] = _schema(items, at.each(), notes)
    if "string" in kinds:
        strings = shape.types["string"]
        if shape.formats:
            out["format"] = next(name for name, _ in FORMATS if name in shape.formats)
        elif not shape.many_strings and strings >= ENUM_MIN_SEEN and min(shape.strings.values()) >= 2 \
                and len(kinds) == 1:
            out["enum"] = sorted(shape.strings) + ([None] if "null" in shape.types else [])
            notes.append(f"{where}: an enum of the {len(shape.strings)} values seen in {strings} messages: a "
                         "value not seen will be quarantined; widen it if the set is open")
    return out


def read_sample(files: Iterable[str | FilePath]) -> Iterable[bytes]:
    """The lines of JSON-lines files (gzip-compressed when named `.gz`)."""
    for file in files:
        path = FilePath(file)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            yield from handle
