"""What Great Expectations observed of a personal column, masked before anything renders it.

GX keeps the values it found in a result (`observed_value`: a column's min or its distinct
values; `partial_unexpected_list` and `_counts`: the first unexpected values), and its Data Docs,
the batch's gate page and the summary show them. An expectation on a column the dataset marks
personal (`foodtaster.privacy`; a column of the suite is its contract path) has every such
value replaced by its mask, in place, before the result is stored and its pages built; its
counts and percentages stay, as they name no value.
"""

from __future__ import annotations

from typing import Any

from foodtaster.privacy import Masker

# A result's keys that count or measure, never hold a value of the column.
COUNTS = frozenset({
    "element_count", "missing_count", "missing_percent", "unexpected_count", "unexpected_percent",
    "unexpected_percent_total", "unexpected_percent_nonmissing", "count",
})
COLUMN_KWARGS = ("column", "column_A", "column_B", "column_list")
__all__ = ["Masker", "mask_result", "mask_results", "personal_columns"]


def personal_columns(kwargs: dict[str, Any], masker: Masker) -> bool:
    """An expectation's columns hold something personal."""
    named: list[Any] = []
    for key in COLUMN_KWARGS:
        value = kwargs.get(key)
        named += value if isinstance(value, list | tuple) else [value] if value else []
    return any(isinstance(c, str) and _holds(c, masker) for c in named)


def _holds(column: str, masker: Masker) -> bool:
    try:
        return masker.holds_personal(column)
    except ValueError:  # a column name that is no path: not one of the contract's
        return False


def mask_results(results: Any, masker: Masker | None) -> None:
    """Mask, in place, the results (GX `ExpectationValidationResult`s) on personal columns."""
    if masker is None:
        return
    for result in results:
        mask_result(result.expectation_config.kwargs, result.result, masker)


def mask_result(kwargs: dict[str, Any], result: dict[str, Any], masker: Masker) -> bool:
    """Mask, in place, every value a result on personal columns holds; whether it did."""
    if not personal_columns(kwargs, masker):
        return False
    for key in list(result):
        if key not in COUNTS:
            result[key] = _masked(result[key], masker)
    return True


def _masked(value: Any, masker: Masker) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: v if k in COUNTS else _masked(v, masker) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v, masker) for v in value]
    return masker.mask(value)
