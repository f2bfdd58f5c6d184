"""A value's place in a message: one type, one printed form, everywhere.

A `Path` is a sequence of steps: a key of an object, an index of an array element, or
`EACH`, every element (the path's pattern, which a rule is named by). It prints as the
reasons, `_unknown`, the contracts and the CLI write it, and parses back from that text:

    data.customer.email          keys
    data.lines[2].qty            an element by its index (0-based)
    data.lines[].qty             every element: the pattern a rule is named by
    data["app.name"].version     a key holding `.`, `[`, `]`, `"` or `\\`, or an empty or
                                 control-character key: quoted as a JSON string in brackets

So every printed path names one place: `data["app.name"]` is the key `app.name` of `data`,
never `data.app.name`, the key `name` of `data.app`. The strict parser in the JVM prints the
paths it finds with the same rule (`jvm/src/foodtaster/jvm/PathText.java`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from foodtaster.errors import UsageError


class PathError(UsageError):
    """A path's text that names no place: unbalanced brackets, an empty key, a bad quote."""


class _Each:
    """Every element of an array: the `[]` of a pattern."""

    _instance: _Each | None = None

    def __new__(cls) -> _Each:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "EACH"

    def __reduce__(self) -> str:
        return "EACH"


EACH: Final = _Each()

Step = str | int | _Each

_QUOTED_CHARS = frozenset('.[]"\\')


def bare(key: str) -> bool:
    """Whether a key prints as it is: non-empty, none of `.[]"\\`, no control character."""
    return bool(key) and not any(c in _QUOTED_CHARS or c < " " for c in key)


def key_text(key: str) -> str:
    """A key as it stands after a dot: bare, or `["quoted"]` (then with no dot before it)."""
    return key if bare(key) else "[" + json.dumps(key, ensure_ascii=False) + "]"


@dataclass(frozen=True, order=False)
class Path:
    """A place in a message. `Path()` is the message itself."""

    steps: tuple[Step, ...] = ()

    # ---- building -------------------------------------------------------------------------

    @classmethod
    def of(cls, *keys: str) -> Path:
        return cls(tuple(keys))

    @classmethod
    def parse(cls, text: str) -> Path:
        """The path a printed text names (the inverse of `str`); a PathError where it names none."""
        return cls(tuple(_parse(text)))

    def key(self, key: str) -> Path:
        return Path((*self.steps, key))

    def index(self, index: int) -> Path:
        return Path((*self.steps, index))

    def each(self) -> Path:
        return Path((*self.steps, EACH))

    def __truediv__(self, other: Path | str) -> Path:
        """This path, then another's steps (a scope's path, then a slot's inside it)."""
        tail = other.steps if isinstance(other, Path) else (other,)
        return Path((*self.steps, *tail))

    # ---- reading --------------------------------------------------------------------------

    @property
    def pattern(self) -> Path:
        """Every index made `EACH`: `data.lines[2].qty` -> `data.lines[].qty`."""
        return Path(tuple(EACH if isinstance(s, int) else s for s in self.steps))

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of a path through objects only; a PathError for one through an array."""
        if not all(isinstance(s, str) for s in self.steps):
            raise PathError(f"{self} goes through an array; keys only name objects")
        return tuple(s for s in self.steps if isinstance(s, str))

    @property
    def parent(self) -> Path:
        return Path(self.steps[:-1])

    @property
    def last(self) -> Step:
        return self.steps[-1]

    @property
    def depth(self) -> int:
        return len(self.steps)

    def ancestors(self) -> Iterator[Path]:
        """The paths above this one, outermost first, the message itself left out."""
        for k in range(1, len(self.steps)):
            yield Path(self.steps[:k])

    def is_under(self, other: Path) -> bool:
        """Strictly under `other` (a child, a grandchild...)."""
        return len(self.steps) > len(other.steps) and self.steps[: len(other.steps)] == other.steps

    def relative_to(self, other: Path) -> Path:
        if not self.is_under(other) and self != other:
            raise PathError(f"{self} is not under {other}")
        return Path(self.steps[len(other.steps):])

    def __str__(self) -> str:
        out: list[str] = []
        for step in self.steps:
            if isinstance(step, _Each):
                out.append("[]")
            elif isinstance(step, int):
                out.append(f"[{step}]")
            elif bare(step):
                out.append(("." if out else "") + step)
            else:
                out.append(key_text(step))
        return "".join(out)

    def __repr__(self) -> str:
        return f"Path({str(self)!r})"

    def __bool__(self) -> bool:
        return bool(self.steps)


def _parse(text: str) -> Iterator[Step]:
    at, n = 0, len(text)
    if n == 0:
        return
    while at < n:
        c = text[at]
        if c == "[":
            if text.startswith("[]", at):
                yield EACH
                at += 2
            elif at + 1 < n and text[at + 1] == '"':
                key, end = _quoted(text, at + 1)
                if not text.startswith("]", end):
                    raise PathError(f"path {text!r}: a quoted key ends with '\"]' (at {end})")
                yield key
                at = end + 1
            else:
                end = text.find("]", at)
                digits = text[at + 1:end] if end > 0 else ""
                if not digits.isdigit() or not digits.isascii():
                    raise PathError(f"path {text!r}: '[' opens an index [n], every element [] or a "
                                    f"quoted key [\"k\"] (at {at})")
                yield int(digits)
                at = end + 1
        else:
            if c == ".":
                if at == 0 or at + 1 >= n:
                    raise PathError(f"path {text!r}: a dot stands between two steps (at {at})")
                at += 1
            elif at != 0:
                raise PathError(f"path {text!r}: a key follows a dot (at {at})")
            end = at
            while end < n and text[end] not in ".[":
                end += 1
            key = text[at:end]
            if not key:
                raise PathError(f"path {text!r}: an empty key is written [\"\"] (at {at})")
            if not bare(key):
                raise PathError(f"path {text!r}: the key {key!r} holds a character that needs quoting: "
                                f"write [{json.dumps(key, ensure_ascii=False)}]")
            yield key
            at = end


def _quoted(text: str, at: int) -> tuple[str, int]:
    """The JSON string starting at `at`, and where it ends."""
    decoder = json.JSONDecoder()
    try:
        value, end = decoder.raw_decode(text, at)
    except json.JSONDecodeError as err:
        raise PathError(f"path {text!r}: a quoted key is a JSON string ({err.msg}, at {at})") from err
    if not isinstance(value, str):
        raise PathError(f"path {text!r}: a quoted key is a JSON string (at {at})")
    return value, end
