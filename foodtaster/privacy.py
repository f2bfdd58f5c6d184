"""Personal data masked wherever a person reads: what a dataset marks personal, and its masks.

A contract marks a field personal (a pandera field's `metadata={"personal": True}`, a JSON
Schema's `x-personal: true`), and the registry may list more (`personal: [data.lines[].recipient]`).
A `Masker` holds those path patterns and the key its masks are hashed with. Every sample a person
reads goes through it: a personal value, and everything under a personal object or array,
becomes its mask, which keeps what an operator needs and never the value:

    ‹personal: email, 17 chars, #3f9a1c›

the kind guessed from the shape (email, phone, digits, text; number, boolean, object, array),
its length, and a keyed hash (HMAC-SHA256, the first hex digits): two messages with the same
value carry the same mask, and nobody without the key can test a guess against it. A line that
is not a JSON object shows none of its bytes: nothing in it can be told personal or not.

The key: `FOODTASTER_MASK_KEY`, or one made at random once and kept in the lake
(`_state/mask_key/`: all state lives in the lake, workers are stateless), never printed.
The quarantine's `_raw` keeps the exact bytes; only what a person reads is masked
(docs/decisions/023-personal-data-masked-at-the-source.md). No Spark here (`engine/judging/masking.py`
is the same mask as Spark columns).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import fsspec

from foodtaster.contract.path import Path
from foodtaster.lake_paths import lake_root
from foodtaster.registry import DatasetConfig, PersonalPathError, personal_pattern

if TYPE_CHECKING:
    from foodtaster.contract.model import Contract

KEY_ENV = "FOODTASTER_MASK_KEY"
KEY_STATE = "mask_key"  # `_state/mask_key/<time>-<random>`: the first one written is the key
HASH_HEX = 6  # hex digits of the keyed hash a mask shows
# The kinds a string is guessed as, first match wins; Java and Python read these alike.
KINDS = (
    ("email", r"^[^@\s]+@[^@\s]+$"),
    ("digits", r"^[0-9]+$"),
    ("phone", r"^\+?[0-9][0-9 ()./-]{5,}[0-9]$"),
)
_KINDS = tuple((kind, re.compile(pattern)) for kind, pattern in KINDS)


def contract_personal(contract: Contract) -> frozenset[str]:
    """The patterns a contract marks personal, at every depth, whichever front-end read it."""
    from foodtaster.contract.describe import describe

    return frozenset(row.path for row in describe(contract) if row.personal)


LINE_LAYERS = ("bytes", "parse")  # the reasons whose value is the start of the line
PERSONAL, NOT_SHOWN = "‹personal: ", "‹not shown: "  # how every mask starts


@dataclass(frozen=True)
class Masker:
    """What a dataset marks personal, and the key its masks are hashed with."""

    patterns: frozenset[str]  # personal path patterns (Path pattern form, e.g. data.lines[].recipient)
    key: bytes = field(repr=False, default=b"")
    paths: frozenset[Path] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", frozenset(Path.parse(p) for p in self.patterns))

    @classmethod
    def for_dataset(cls, config: DatasetConfig, root: str | None = None,
                    contract: Contract | None = None) -> Masker:
        """The contract's marks (`contract`, when already read) and the registry's `personal`
        list, with the key of the lake at `root` (default: the configured lake)."""
        read = contract if contract is not None else config.read_contract()
        marked = contract_personal(read) | frozenset(config.personal)
        return cls(marked, mask_key(root) if marked else b"")  # nothing to mask: no key made

    @classmethod
    def for_readers(cls, config: DatasetConfig, root: str | None = None,
                    contract: Contract | None = None) -> Masker:
        """`for_dataset`, keyed even when the dataset marks nothing personal: a line nothing can
        be told of is shown as its length and keyed hash in every dataset (`message`,
        `reason_value`), with the lake's key, so one line carries one mask wherever it is read."""
        masker = cls.for_dataset(config, root, contract)
        return masker if masker.key else cls(masker.patterns, mask_key(root))

    @classmethod
    def of(cls, patterns: Iterable[str], key: bytes) -> Masker:
        return cls(frozenset(personal_pattern(p) for p in patterns), key)

    # ---- which paths ------------------------------------------------------------------------

    def is_personal(self, path: str | Path) -> bool:
        """The path (exact or a pattern) is personal, or lies under a personal object or array."""
        pattern = _path(path).pattern
        return pattern in self.paths or any(a in self.paths for a in pattern.ancestors())

    def holds_personal(self, path: str | Path) -> bool:
        """A value at the path may show something personal: it is personal, or a personal path
        lies under it (a whole object's text holds its email)."""
        pattern = _path(path).pattern
        return self.is_personal(pattern) or any(p.is_under(pattern) for p in self.paths)

    # ---- masks -------------------------------------------------------------------------------

    def mask(self, value: Any) -> str:
        """A value's mask: its shape and a keyed hash, never the value."""
        kind, size, text = _shape(value)
        return f"{PERSONAL}{kind}, {size}, #{self.digest(text)}›"

    def digest(self, text: str | bytes) -> str:
        data = text.encode("utf-8") if isinstance(text, str) else text
        return hmac.new(self.key, data, hashlib.sha256).hexdigest()[:HASH_HEX]

    def value(self, path: str | Path, value: Any) -> Any:
        """One value at a path, as a person may read it: masked if personal, its personal parts
        masked if it holds any, else itself."""
        at = _path(path)
        if value is None:
            return None
        if self.is_personal(at):
            return self.mask(value)
        if isinstance(value, dict) and self.holds_personal(at):
            return {k: self.value(at.key(k), v) for k, v in value.items()}
        if isinstance(value, list) and self.holds_personal(at):
            return [self.value(at.index(i), v) for i, v in enumerate(value)]
        return value

    def message(self, raw: bytes | str | None) -> str:
        """A person's view of a message's bytes: the JSON text with every personal value (and
        everything under a personal object or array) replaced by its mask; a line that is not
        a JSON object: no bytes of it, only its length, a keyed hash and why."""
        if raw is None:
            return ""
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        try:
            document = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            return self.opaque(data, "not UTF-8")
        except (ValueError, RecursionError):
            return self.opaque(data, "not JSON")
        if not isinstance(document, dict):
            return self.opaque(data, "not a JSON object")
        try:
            return json.dumps(self.value(Path(), document), ensure_ascii=False, separators=(", ", ": "))
        except RecursionError:
            return self.opaque(data, "nested too deep to show")

    def scrub(self, text: str, raw: bytes | str | None) -> str:
        """`text`, words about one message that are not its values (a Python check's exception),
        with every personal value of that message (`raw`) in it replaced by the value's mask.
        The text as it is when nothing is personal, or when `raw` is not a JSON object: its
        personal values cannot be told."""
        if not self.paths or raw is None:
            return text
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            return text
        if not isinstance(document, dict):
            return text
        masks: dict[str, str] = {}
        for value in self._personal_leaves(Path(), document):
            for form in {str(value), json.dumps(value, ensure_ascii=False)}:
                masks[form] = self.mask(value)
        # Longest first: a value that holds another (a full name, its first name) goes whole.
        for form in sorted(masks, key=len, reverse=True):
            text = text.replace(form, masks[form])
        return text

    def _personal_leaves(self, at: Path, value: Any) -> Iterable[Any]:
        """The strings and numbers at or under the personal paths of a parsed message."""
        if isinstance(value, dict):
            if self.holds_personal(at):
                for key, item in value.items():
                    yield from self._personal_leaves(at.key(key), item)
        elif isinstance(value, list):
            if self.holds_personal(at):
                for index, item in enumerate(value):
                    yield from self._personal_leaves(at.index(index), item)
        elif isinstance(value, str | int | float) and not isinstance(value, bool) and str(value) \
                and self.is_personal(at):
            yield value

    def line_start(self, text: str) -> str:
        """The start of a line nothing can be told of (a bytes or parse reason's value, one of
        LINE_LAYERS): its length and keyed hash, no character (`engine.judging.masking.opaque_column`)."""
        return f"{NOT_SHOWN}{len(text)} chars of the line, #{self.digest(text)}›"

    def reason_value(self, reason: Mapping[str, Any]) -> Any:
        """A reason's value as a person without the raw-payload permission may read it: the
        start of a line (a bytes or parse reason's value, LINE_LAYERS) as `line_start`; any
        other value, and one masked already (at the source, or by an earlier reader), as it is."""
        value = reason.get("value")
        if value is None or reason.get("layer") not in LINE_LAYERS \
                or str(value).startswith((NOT_SHOWN, PERSONAL)):
            return value
        return self.line_start(str(value))

    def opaque(self, data: bytes, why: str) -> str:
        """A line nothing can be told of: its length, a keyed hash and why."""
        return f"{NOT_SHOWN}{len(data)} bytes, {why}, #{self.digest(data)}›"

    def text(self, path: str | Path | None, text: str | None) -> str | None:
        """A value's text as a reason holds it (JSON text, or a string's characters), as a
        person may read it: masked where its path holds anything personal."""
        if text is None or path is None or not self.holds_personal(path):
            return text
        at = _path(path)
        if self.is_personal(at):
            return self.mask(_json_or_text(text))
        try:
            return json.dumps(self.value(at, json.loads(text)), ensure_ascii=False, separators=(",", ":"))
        except ValueError:
            return self.mask(text)


def _path(path: str | Path) -> Path:
    return Path.parse(path) if isinstance(path, str) else path


def _json_or_text(text: str) -> Any:
    """A reason's value text: a JSON string's characters are the value, else the text itself."""
    if text.startswith('"'):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _shape(value: Any) -> tuple[str, str, str]:
    """A value's kind, its size for a person, and the text its hash is taken of."""
    if isinstance(value, bool):
        return "boolean", "1 value", json.dumps(value)
    if isinstance(value, int | float):
        text = json.dumps(value)
        return "number", f"{len(text)} chars", text
    if isinstance(value, dict):
        return "object", f"{len(value)} keys", json.dumps(value, sort_keys=True, ensure_ascii=False)
    if isinstance(value, list):
        return "array", f"{len(value)} elements", json.dumps(value, sort_keys=True, ensure_ascii=False)
    text = str(value)
    kind = next((k for k, pattern in _KINDS if pattern.match(text)), "text")
    return kind, f"{len(text)} chars", text


# ---- the key --------------------------------------------------------------------------------

_KEYS: dict[str, bytes] = {}


def key_source(root: str | None = None) -> str:
    """Which key `mask_key(root)` takes, in words (never the key): one a person can compare
    with the job's, since another key gives every value another mask."""
    if os.environ.get(KEY_ENV):
        return f"the key in {KEY_ENV}"
    from foodtaster.state.lake import Lake

    return f"the mask key of the lake at {Lake(root or lake_root()).root} (_state/{KEY_STATE}/)"


def mask_key(root: str | None = None) -> bytes:
    """The key masks are hashed with: `FOODTASTER_MASK_KEY`, else the lake's (made once)."""
    written = os.environ.get(KEY_ENV)
    if written:
        return written.encode("utf-8")
    from foodtaster.state.lake import Lake

    folder = Lake(root or lake_root()).state(KEY_STATE)
    if folder not in _KEYS:
        _KEYS[folder] = _lake_key(folder)
    return _KEYS[folder]


def _lake_key(folder: str) -> bytes:
    """The first key written under `folder`; one written now if there is none. Two workers
    writing at once each write their own; both then read the first by name, the same one."""
    fs, path = fsspec.core.url_to_fs(folder)
    if not _keys(fs, path):
        fs.makedirs(path, exist_ok=True)
        name = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f") + "-" + secrets.token_hex(4)
        with fs.open(f"{path}/{name}", "w") as handle:
            handle.write(secrets.token_hex(32))
    with fs.open(_keys(fs, path)[0], "r") as handle:
        return bytes.fromhex(handle.read().strip())


def _keys(fs: Any, path: str) -> list[str]:
    if not fs.exists(path):
        return []
    return sorted(p for p in fs.ls(path, detail=False) if not p.rsplit("/", 1)[-1].startswith("."))


def hmac_pads(key: bytes) -> tuple[bytes, bytes]:
    """HMAC-SHA256's inner and outer keys (RFC 2104), for a hash computed as Spark columns."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    return bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)


__all__ = ["KEY_ENV", "KINDS", "LINE_LAYERS", "NOT_SHOWN", "PERSONAL", "Masker", "PersonalPathError",
           "contract_personal", "hmac_pads", "mask_key", "personal_pattern"]
