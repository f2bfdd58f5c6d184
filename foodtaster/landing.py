"""The landing result: what a source reports of the batch it landed, the one document the
land task hands every later task of a run (its XCom, `as_dict`/`from_dict`) and the ledger
records. Built by a source (`foodtaster.sources.raw_batch.landing_result`); shared, so the
ledger, the job and the Airflow tasks read it without importing a source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class LandingResult:
    """What a landing reports, the one document the land task hands every later task (its
    XCom, `as_dict`/`from_dict`): the manifest's entries in their JSON form, the count of
    messages, what the landing refused or replaced, the lake it landed into and whether the
    run judges a landed batch again (the reprocess DAG)."""

    dataset: str
    batch_id: str
    batch_date: str
    raw_path: str  # Lake.raw(dataset, batch_date, batch_id)
    files: list[dict[str, Any]]  # manifest entries of the readable files in the batch
    unreadable: list[dict[str, Any]]  # files quarantined whole, with the reason
    messages: int  # lines in the readable files; an unreadable file adds none
    empty: bool  # the batch holds no file at all
    refused: list[dict[str, Any]] = field(default_factory=list)  # inbox entries never read (symlinks)
    superseded: dict[str, Any] | None = None  # this landing replaced a delivery: which, why, by whom
    lake: str = ""  # the root of the lake the batch was landed into
    reprocess: bool = False  # a landed batch judged again, not a new landing

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> LandingResult:
        """Also a partial document (a test's): what is missing is empty."""
        return cls(
            dataset=document.get("dataset", ""), batch_id=document["batch_id"],
            batch_date=document["batch_date"], raw_path=document.get("raw_path", ""),
            files=list(document.get("files", ())), unreadable=list(document.get("unreadable", ())),
            messages=document.get("messages", 0), empty=bool(document.get("empty", False)),
            refused=list(document.get("refused", ())), superseded=document.get("superseded"),
            lake=document.get("lake", ""), reprocess=bool(document.get("reprocess", False)),
        )
