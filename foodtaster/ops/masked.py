"""A quarantined message as a reader may see it: masked (`foodtaster.privacy`), or its exact
bytes for one allowed to read personal data (`foodtaster quarantine show --raw`)."""

from __future__ import annotations

from dataclasses import dataclass

from foodtaster.ops.terminal import printable
from foodtaster.privacy import Masker


@dataclass(frozen=True)
class Shown:
    """How a dataset's quarantined bytes are shown: `masker` None shows them as they are."""

    masker: Masker | None

    @classmethod
    def of(cls, dataset: str, lake_root: str, raw: bool = False) -> Shown:
        """Masked where the dataset marks anything personal (a message that is no JSON object:
        not a byte of it); as they are with `raw`, or when it marks nothing."""
        if raw:
            return cls(None)
        from foodtaster.registry import get_dataset

        masker = Masker.for_dataset(get_dataset(dataset), lake_root)
        return cls(masker if masker.paths else None)

    @property
    def exact(self) -> bool:
        """The bytes are shown as they are."""
        return self.masker is None

    def text(self, data: bytes | None) -> str:
        """Printable text: no escape sequence from a message reaches a terminal."""
        return printable(data or b"") if self.masker is None else printable(self.masker.message(data))
