"""The effective contract as rows a person reads: one row a slot, at every depth.

`describe(contract)` gives the rows `foodtaster contract show` prints, whichever front-end
read the contract: a pandera model's slots from the model itself (`Contract.walk`), a JSON
Schema's from the schema it keeps (`contract.schema.describe()`, the same `ContractRow`).
No Spark, no pandera: only the contract model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from foodtaster.contract.model import Check, FieldRule, render, rule_id
from foodtaster.contract.path import Path

VALUES_SHOWN = 6  # an isin's allowed values shown before "…"


@dataclass(frozen=True)
class ContractRow:
    """One slot of the contract: its full pattern (`data.lines[].qty`) and what it must be."""

    path: str
    type: str  # `string`, `integer`, `decimal(12,2)`, `object`, `array`, `timestamp`, ...
    required: bool
    nullable: bool
    checks: tuple[str, ...]  # rule-id words: `greater_than_or_equal_to(1)`, `isin(US,DE)`
    key: bool  # part of the message's unique key
    personal: bool  # masked wherever a person reads it


def describe(contract: Any) -> list[ContractRow]:
    """The contract's rows, parents before the slots under them."""
    schema = getattr(contract, "schema", None)
    if schema is not None:  # a JSON Schema contract: its own reading, the same rows
        rows: list[ContractRow] = schema.describe()
        return rows
    python: dict[Path, list[str]] = {}
    for check in contract.python_checks:
        python.setdefault(check.path, []).append(f"{check.rule.removeprefix(str(check.path) + '.')} (python)")
    return [_row(where, rule, tuple(python.get(where, ()))) for where, rule in contract.walk()]


def _row(where: Path, rule: FieldRule, python: tuple[str, ...]) -> ContractRow:
    checks = [check_words(c) for c in rule.checks if c.name != "iso_timestamp"]
    if rule.items is not None and rule.items.strict is not False:
        checks.append("items.strict" if rule.items.strict is True else "items.filter")
    return ContractRow(
        path=str(where), type=type_words(rule), required=rule.required, nullable=rule.nullable,
        checks=(*checks, *python), key=rule.unique, personal=rule.personal,
    )


def type_words(rule: FieldRule) -> str:
    """The slot's type as a person reads it: a decimal with its size, an implied object said so,
    a string read as an instant `timestamp`."""
    t = rule.json_type
    if t.name == "decimal":
        return f"decimal({t.precision},{t.scale})"
    if rule.is_object and not rule.declared:
        return "object (implied)"
    if rule.is_timestamp:
        return "timestamp"
    return t.name


def check_words(check: Check) -> str:
    """A check as its rule id names it, with what the id leaves out (a pattern, a list of
    values) in its parentheses: `greater_than_or_equal_to(1)`, `str_matches(^c-[0-9]{5}$)`,
    `isin(US,DE,FR)`."""
    words = rule_id(None, check.name, check.statistics)
    pattern = check.statistics.get("pattern")
    if pattern is not None:
        return f"{words}({getattr(pattern, 'pattern', pattern)})"
    listed = [v for v in check.statistics.values() if isinstance(v, list | tuple | set | frozenset)]
    if listed and "(" not in words:
        values = list(listed[0])
        if isinstance(listed[0], set | frozenset):
            values = sorted(values, key=str)
        shown = ",".join(render(v) for v in values[:VALUES_SHOWN])
        return f"{words}({shown}{',…' if len(values) > VALUES_SHOWN else ''})"
    return words


def strict_words(strict: bool | str) -> str:
    """What an unknown field is, as `Config.strict` says."""
    if strict is True:
        return "a reason (strict)"
    return "dropped (filter)" if strict == "filter" else "kept in _unknown"
