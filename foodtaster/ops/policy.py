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
    """Hold at or above hold_rate or on a failed batch gate; alert at or above alert_rate."""
    rate = float(summary["quarantine_rate"])
    why: list[str] = []
    if summary["messages"] == 0:
        return Verdict(publish=False, alert=False, severity="ok", why=("empty batch",))
    if rate >= config.hold_rate:
        why.append(f"quarantine rate {rate:.2%} >= hold_rate {config.hold_rate:.2%}")
    if not summary["gate"]["passed"]:
        failed = ", ".join(f["expectation"] for f in summary["gate"]["failed"]) or "unknown"
        why.append(f"batch gate failed: {failed}")
    if why:
        return Verdict(publish=False, alert=True, severity="critical", why=tuple(why))
    if rate >= config.alert_rate:
        return Verdict(
            publish=True, alert=True, severity="warning",
            why=(f"quarantine rate {rate:.2%} >= alert_rate {config.alert_rate:.2%}",),
        )
    return Verdict(publish=True, alert=False, severity="ok", why=())
