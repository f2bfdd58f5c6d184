"""The gate policy: from a batch summary and the dataset's thresholds to publish or hold."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from foodtaster.registry import DatasetConfig


@dataclass(frozen=True)
class Verdict:
    publish: bool
    alert: bool
    severity: str  # "ok" | "warning" | "critical"
    why: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide(summary: dict[str, Any], config: DatasetConfig) -> Verdict:
    """Hold at or above hold_rate or on a failed batch gate; alert at or above alert_rate.

    The thresholds apply to the rate of NEW poison among the quarantined messages. Not
    counted: those already on the poison list (`listed`: they paged someone when first
    seen), those failing only a retryable rule (`retrying`: they may pass on a later run)
    and those held for their conversation (`held_for_group`: their poison message is
    counted itself). Each count is 0 when the summary has none. A batch made only of
    listed messages is not held: there is nothing new in it, not even rows for the
    batch gate to judge.
    """
    rate = float(summary["quarantine_rate"])
    messages = summary["messages"]
    if messages == 0:
        return Verdict(publish=False, alert=False, severity="ok", why=("empty batch",))
    listed = int(summary.get("listed") or 0)
    waiting = int(summary.get("retrying") or 0) + int(summary.get("held_for_group") or 0)
    if not listed and not waiting:
        return _judge(rate, "quarantine rate", summary, config, ())
    quarantined = int(summary["quarantined"])
    notes = []
    if listed:
        notes.append(f"{listed} of {quarantined} quarantined messages were already listed")
        if listed == messages:
            return Verdict(publish=True, alert=False, severity="ok", why=(f"all {notes[0]}",))
    if waiting:
        notes.append(f"{waiting} of {quarantined} quarantined messages wait (a retry, their conversation)")
    new = (quarantined - listed - waiting) / messages
    return _judge(new, "new quarantine rate", summary, config, tuple(notes))


def _judge(
    rate: float, label: str, summary: dict[str, Any], config: DatasetConfig, notes: tuple[str, ...]
) -> Verdict:
    why: list[str] = []
    if rate >= config.hold_rate:
        why.append(f"{label} {rate:.2%} >= hold_rate {config.hold_rate:.2%}")
    if not summary["gate"]["passed"]:
        failed = ", ".join(f["expectation"] for f in summary["gate"]["failed"]) or "unknown"
        why.append(f"batch gate failed: {failed}")
    if why:
        return Verdict(publish=False, alert=True, severity="critical", why=(*why, *notes))
    if rate >= config.alert_rate:
        return Verdict(
            publish=True, alert=True, severity="warning",
            why=(f"{label} {rate:.2%} >= alert_rate {config.alert_rate:.2%}", *notes),
        )
    return Verdict(publish=True, alert=False, severity="ok", why=notes)
