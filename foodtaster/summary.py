"""The batch summary: what a run of the job found, the one document every later step reads.

Written by the job as `reports/<dataset>/<batch_id>/summary.json` (its last write for a
batch), read by the gate, publish, alert and ledger tasks, the CLI, the batches page,
release and recall. `BatchSummary` is its one typed form; `to_json` and `from_json` its one
JSON form (the keys on disk are the field names; optional ones are left out when unset).
The verdict in it was decided once, by `foodtaster.policy.decide`, when the job wrote it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from foodtaster.errors import UsageError
from foodtaster.policy import Verdict
from foodtaster.registry import Tables


@dataclass(frozen=True)
class GateResult:
    """The Great Expectations batch gate on the valid rows (`foodtaster.engine.gate.gate`)."""

    passed: bool
    suite: str | None = None
    skipped: bool = False
    failed: list[dict[str, Any]] = field(default_factory=list)  # {"expectation", "kwargs", "observed"}
    results: list[dict[str, Any]] = field(default_factory=list)
    data_docs: str | None = None

    @classmethod
    def skipped_gate(cls) -> GateResult:
        return cls(passed=True, skipped=True)

    @property
    def failed_expectations(self) -> list[str]:
        return [str(f.get("expectation")) for f in self.failed]


@dataclass(frozen=True)
class BatchTables:
    """Where a batch's rows are in the catalog: its two tables, the audit branch its valid rows
    were judged on (that branch's snapshot) and the quarantine's snapshot; once published, main's
    snapshot and the tag naming it (docs/decisions/027-iceberg-tables-write-audit-publish.md)."""

    names: Tables
    branch: str
    staged_snapshot: int | None = None
    quarantine_snapshot: int | None = None
    published_snapshot: int | None = None
    tag: str | None = None

    @property
    def valid(self) -> str:
        return self.names.identifier("valid")

    @property
    def quarantine(self) -> str:
        return self.names.identifier("quarantine")

    def published_as(self, snapshot_id: int, tag: str) -> BatchTables:
        return replace(self, published_snapshot=snapshot_id, tag=tag)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchTables:
        return cls(**{**data, "names": Tables(**data["names"])})


@dataclass(frozen=True)
class BatchSummary:
    dataset: str
    batch_id: str
    batch_date: str
    run_id: str
    messages: int
    valid: int
    quarantined: int
    duplicates_dropped: int
    quarantine_rate: float
    gate: GateResult
    verdict: Verdict
    reasons: dict[str, int] = field(default_factory=dict)  # rule id -> quarantined rows, most first
    samples: list[dict[str, Any]] = field(default_factory=list)  # a few quarantined rows, escaped
    # report, data_docs
    paths: dict[str, str | None] = field(default_factory=dict)
    tables: BatchTables | None = None  # where its rows are in the catalog
    listed: int = 0  # quarantined rows already on the poison list before this run
    crash_isolated: list[dict[str, Any]] = field(default_factory=list)  # found by this run
    contract: str | None = None
    input: str | None = None
    ingested_at: str | None = None
    finished_at: str | None = None
    published: bool = False
    published_at: str | None = None
    released: dict[str, Any] | None = None  # an operator published it after a hold: who, when, why
    retrying: int = 0  # quarantined rows failing retryable rules only
    held_for_group: int = 0  # quarantined rows held for their conversation
    groups_open: int | None = None  # open conversation groups after this batch (grouped datasets)
    references_unchecked: list[str] | None = None
    recalled: int | None = None  # rows a recall moved from valid to the quarantine
    recalls: list[dict[str, Any]] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # A JSON Schema contract's keywords the dataset asked not to judge (`ignore`, JSON pointers)
    not_judged: list[str] | None = None
    # The batch's drift against the batches before it (`foodtaster.drift.DriftReport.to_json`):
    # unknown paths with counts, shares, producers and the batch first seen; fields stopped coming
    drift: dict[str, Any] | None = None

    @property
    def accounted(self) -> int:
        """valid + quarantined + duplicates dropped: equals `messages` when nothing is lost."""
        return self.valid + self.quarantined + self.duplicates_dropped

    def with_changes(self, **changes: Any) -> BatchSummary:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["gate"] = asdict(self.gate)
        out["verdict"] = self.verdict.as_dict()
        out["tables"] = self.tables.to_json() if self.tables is not None else None
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchSummary:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UsageError(f"batch summary of {data.get('dataset')} batch {data.get('batch_id')}: "
                             f"unknown keys {sorted(unknown)}")
        values = dict(data)
        gate = dict(values.get("gate") or {"passed": True, "skipped": True})
        gate_known = {f.name for f in fields(GateResult)}
        values["gate"] = GateResult(**{k: v for k, v in gate.items() if k in gate_known})
        values["verdict"] = Verdict.from_json(values.get("verdict") or {})
        if values.get("tables") is not None:
            values["tables"] = BatchTables.from_json(values["tables"])
        return cls(**values)


@dataclass(frozen=True)
class Decision:
    """What the read_verdict task hands the publish, alert and ledger tasks: the batch summary's
    verdict and the facts they need. An XCom, so it crosses as `to_json`."""

    dataset: str
    batch_id: str
    batch_date: str
    lake: str
    verdict: Verdict
    counts: dict[str, Any]  # messages, valid, quarantined, duplicates_dropped, listed, quarantine_rate
    top_reasons: list[list[Any]]  # [rule id, quarantined rows], most first
    gate_failed: list[str]
    run_id: str | None  # the run whose staged rows were judged
    paths: dict[str, str | None]
    summary_path: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict.as_dict()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        return cls(**{**data, "verdict": Verdict.from_json(data["verdict"])})
