"""What a contract declares about references, read without Spark: the rule id of each
reference check and, for a retryable one, its retry policy.

A contract declares a reference in the field's pandera metadata:

    customer_id: Series[str] = pa.Field(..., metadata={
        "references": "customers.customer_id",
        "retry": {"max_attempts": 4, "backoff_s": 43200, "backoff_factor": 2},
    })

The engine checks references on Spark (foodtaster.engine.judging.reference_checks); the DAG's retry task
reads the policies here to decide whether a pass has anything to do before Spark starts
(foodtaster.state.retries), so this module imports neither pyspark nor the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # read without pandera's import (the DAG's retry task)
    from pandera.pandas import DataFrameModel

from foodtaster.errors import UsageError


class ContractReferenceError(UsageError):
    """A `references` or `retry` declaration that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often a retryable rule is tried again: attempt n is due `backoff_s * factor**n`
    seconds after the previous one (the first after the message landed)."""

    max_attempts: int
    backoff_s: float
    backoff_factor: float = 2.0

    def wait_s(self, attempts: int) -> float:
        return self.backoff_s * self.backoff_factor ** attempts


@dataclass(frozen=True)
class Reference:
    column: str  # the field of this dataset
    dataset: str  # the referenced dataset
    key: str  # its field
    retry: RetryPolicy | None

    @property
    def rule(self) -> str:
        return f"{self.column}.references({self.dataset}.{self.key})"

    @property
    def flag(self) -> str:
        """The column `mark_references` adds: true where the value is not among the keys."""
        return f"_ref_missing_{self.column}"


def _policy(field: str, retry: Any) -> RetryPolicy | None:
    if retry is None:
        return None
    try:
        policy = RetryPolicy(int(retry["max_attempts"]), float(retry["backoff_s"]),
                             float(retry.get("backoff_factor", 2.0)))
    except (KeyError, TypeError, ValueError) as err:
        raise ContractReferenceError(
            f"{field}: retry must be {{max_attempts: int, backoff_s: seconds, backoff_factor: x}}: {err}"
        ) from err
    if policy.max_attempts < 1 or policy.backoff_s < 0 or policy.backoff_factor < 1:
        raise ContractReferenceError(f"{field}: need max_attempts >= 1, backoff_s >= 0, backoff_factor >= 1")
    return policy


def read_references(model: type[DataFrameModel] | None) -> list[Reference]:
    """The reference checks a pandera model declares in its fields' metadata (a JSON Schema
    contract, `None` here, declares none)."""
    if model is None:
        return []
    found = []
    for name, column in model.to_schema().columns.items():
        meta = column.metadata or {}
        if "references" not in meta:
            continue
        dataset, dot, key = str(meta["references"]).partition(".")
        if not dot or not dataset or not key:
            raise ContractReferenceError(f"{model.__name__}.{name}: references must be '<dataset>.<field>'")
        found.append(Reference(name, dataset, key, _policy(f"{model.__name__}.{name}", meta.get("retry"))))
    return found


def retryable(references: list[Reference]) -> dict[str, RetryPolicy]:
    """Rule id -> its retry policy, for the retryable rules among `references`."""
    return {ref.rule: ref.retry for ref in references if ref.retry is not None}
