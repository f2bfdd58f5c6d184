"""The gate policy: from a batch's counts, its batch gate and the dataset's thresholds to a
verdict (publish or hold, alert or not). Pure: decided once, by the job, when it writes the
batch summary (`foodtaster.summary`); every later step reads that verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from foodtaster.registry import DatasetConfig

OK, WARNING, CRITICAL = "ok", "warning", "critical"


@dataclass(frozen=True)
class Verdict:
    publish: bool
    alert: bool
    severity: str  # OK | WARNING | CRITICAL
    why: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "why": list(self.why)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(publish=bool(data["publish"]), alert=bool(data["alert"]),
                   severity=str(data["severity"]), why=tuple(data.get("why") or ()))


@dataclass(frozen=True)
class Facts:
    """What a verdict is decided from: the batch's counts and its batch gate."""

    messages: int
    quarantine_rate: float
    quarantined: int = 0
    listed: int = 0  # on the poison list before this run: they paged someone when first seen
    retrying: int = 0  # failing retryable rules only: they may pass on a later run
    held_for_group: int = 0  # held for their conversation: its poison message counts itself
    gate_passed: bool = True
    gate_failed: tuple[str, ...] = ()  # the failed expectations
    accounted: int | None = None  # valid + quarantined + duplicates dropped, when known
    # Each new unknown path at or above the dataset's drift_page_share, said for a person
    # (`foodtaster.drift.page_why`): the alert runs whatever the rate
    drift_pages: tuple[str, ...] = ()

    @classmethod
    def of_summary(cls, summary: Mapping[str, Any]) -> Facts:
        """The facts of a batch summary's JSON form (`foodtaster.summary`); counts it lacks are 0."""
        gate = summary.get("gate") or {}
        return cls(
            messages=int(summary["messages"]), quarantine_rate=float(summary["quarantine_rate"]),
            quarantined=int(summary.get("quarantined") or 0), listed=int(summary.get("listed") or 0),
            retrying=int(summary.get("retrying") or 0),
            held_for_group=int(summary.get("held_for_group") or 0),
            gate_passed=bool(gate.get("passed", True)),
            gate_failed=tuple(str(f.get("expectation")) for f in gate.get("failed") or ()),
        )


LISTED_NOTE = "quarantined messages were already listed"
WAITING_NOTE = "quarantined messages wait (a retry, their conversation)"


def split_why(why: list[str]) -> tuple[list[str], list[str]]:
    """A verdict's `why` as a person reads it: what decided the verdict (a threshold crossed, a
    failed gate), and the facts `decide` only notes beside it (messages already listed or
    waiting, left out of the rate it judged), which are no reason to hold."""
    notes = [line for line in why if line.endswith((LISTED_NOTE, WAITING_NOTE))]
    return [line for line in why if line not in notes], notes


def decide(facts: Facts, config: DatasetConfig) -> Verdict:
    """Hold at or above hold_rate, on a failed batch gate, or when the counts do not add up;
    alert at or above alert_rate, or when a new unknown path crossed drift_page_share (a
    warning: drift alone never holds a batch).

    The thresholds apply to the rate of NEW poison among the quarantined messages: not
    counted are those already listed, those retrying and those held for their group. A batch
    made only of listed messages is not held: there is nothing new in it, not even rows for
    the batch gate to judge.
    """
    if facts.accounted is not None and facts.accounted != facts.messages:
        # Nothing is lost: counts that do not add up never reach consumers.
        return Verdict(publish=False, alert=True, severity=CRITICAL, why=(
            f"counts do not add up: {facts.messages} messages, {facts.accounted} valid + "
            "quarantined + dropped",))
    verdict = _decide_counts(facts, config)
    if not facts.drift_pages:
        return verdict
    severity = WARNING if verdict.severity == OK else verdict.severity
    return Verdict(publish=verdict.publish, alert=True, severity=severity,
                   why=(*verdict.why, *facts.drift_pages))


def _decide_counts(facts: Facts, config: DatasetConfig) -> Verdict:
    if facts.messages == 0:
        return Verdict(publish=False, alert=False, severity=OK, why=("empty batch",))
    listed, waiting = facts.listed, facts.retrying + facts.held_for_group
    if not listed and not waiting:
        return _judge(facts.quarantine_rate, "quarantine rate", facts, config, ())
    notes = []
    if listed:
        notes.append(f"{listed} of {facts.quarantined} {LISTED_NOTE}")
        if listed == facts.messages:
            return Verdict(publish=True, alert=False, severity=OK, why=(f"all {notes[0]}",))
    if waiting:
        notes.append(f"{waiting} of {facts.quarantined} {WAITING_NOTE}")
    new = (facts.quarantined - listed - waiting) / facts.messages
    return _judge(new, "new quarantine rate", facts, config, tuple(notes))


def _judge(rate: float, label: str, facts: Facts, config: DatasetConfig, notes: tuple[str, ...]) -> Verdict:
    why: list[str] = []
    if rate >= config.hold_rate:
        why.append(f"{label} {rate:.2%} >= hold_rate {config.hold_rate:.2%}")
    if not facts.gate_passed:
        why.append(f"batch gate failed: {', '.join(facts.gate_failed) or 'unknown'}")
    if why:
        return Verdict(publish=False, alert=True, severity=CRITICAL, why=(*why, *notes))
    if rate >= config.alert_rate:
        return Verdict(
            publish=True, alert=True, severity=WARNING,
            why=(f"{label} {rate:.2%} >= alert_rate {config.alert_rate:.2%}", *notes),
        )
    return Verdict(publish=True, alert=False, severity=OK, why=notes)
