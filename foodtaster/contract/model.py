"""The contract model: what a dataset's messages must be, apart from any engine that judges it.

Front-ends read into it (`pandera_reader`: a pandera model; `json_schema`: a producer's JSON
Schema); back-ends judge by it (`foodtaster.engine.judging.rules` and `row_checks` on Spark, with the
strict parser's spec; `foodtaster_dev.oracle` in pandas). This module imports neither Spark
nor pandera, as pandera's `api/` imports no backend: a check here is only its name and its
arguments, declared once in `foodtaster.contract.checks`; what it means is each back-end's.

Types are strict JSON types: a string is only a JSON string, a number a JSON number, an
integer a number written without a fraction or exponent. A decimal and a date are read from
a JSON number and a `YYYY-MM-DD` string. Paths are `foodtaster.contract.path.Path`, relative
to their scope (the message, or one array element).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from foodtaster.contract.checks import CheckError, Declared, declared, render
from foodtaster.contract.path import Path
from foodtaster.errors import UsageError


class ContractError(UsageError):
    """A contract that says something no back-end gives the front-end's meaning to."""


# `json`: any JSON value, kept as its JSON text (a JSON Schema type union, `oneOf`, no `type`).
JSON_TYPES = ("string", "number", "integer", "boolean", "decimal", "date", "object", "array", "json")


@dataclass(frozen=True)
class JsonType:
    """A slot's type: a JSON type (string, number, integer, boolean), a decimal or a date read
    from one, or a container (object, array)."""

    name: str
    precision: int | None = None  # a decimal's
    scale: int | None = None

    def __post_init__(self) -> None:
        if self.name not in JSON_TYPES:
            raise ContractError(f"no JSON type {self.name!r}; one of {', '.join(JSON_TYPES)}")
        if self.name == "decimal":
            p, s = self.precision, self.scale
            if p is None or s is None or not 0 <= s <= p <= 38 or p < 1:
                raise ContractError(f"decimal({p},{s}) has no exact type here (precision 1..38, "
                                    "scale 0..precision)")

    @property
    def word(self) -> str:
        """What the type rule names: `amount.type(number)`; a decimal is a JSON number."""
        return "number" if self.name == "decimal" else self.name


OBJECT = JsonType("object")
ARRAY = JsonType("array")


class Check(NamedTuple):
    """One check on a slot's value: its name, declared in `foodtaster.contract.checks`, and its
    arguments as written (pandera's statistics; rule ids print them)."""

    name: str
    statistics: dict[str, Any]

    @property
    def declared(self) -> Declared:
        return declared(self.name)

    @property
    def arguments(self) -> Any:
        """The arguments typed (`checks.InRange`, ...), as each back end reads them."""
        return self.declared.read(self.statistics)

    @property
    def reason(self) -> str:
        """What a failing value must be, for a person: `must be >= 0`."""
        return self.declared.reason(self.arguments)


def rule_id(column: str | Path | None, check_name: str, statistics: dict[str, Any]) -> str:
    """A stable id, e.g. `amount.greater_than_or_equal_to(0)`, `order_id.str_length(min_value=1)`."""
    scalars = {
        k: v for k, v in statistics.items()
        if v is not None and not isinstance(v, list | tuple | set | dict) and k != "pattern"
    }
    if len(scalars) == 1:
        args = f"({render(next(iter(scalars.values())))})"
    elif scalars:
        args = "(" + ",".join(f"{k}={render(v)}" for k, v in scalars.items()) + ")"
    else:
        args = ""
    where = str(column) if column is not None else ""
    return f"{where}.{check_name}{args}" if where else f"{check_name}{args}"


def frame_rule_id(s: dict[str, Any]) -> str:
    """`amount.greater_than(0).when(status in (PAID,SHIPPED,DELIVERED))`"""
    condition = f"{s['if_column']} in ({','.join(map(str, s['if_in']))})"
    return f"{s['then_column']}.{s['then_check']}({render(s['then_value'])}).when({condition})"


@dataclass(frozen=True)
class FieldRule:
    """One slot of a scope (the message, or an array's element): a value at a path of keys.

    `path` is the slot's place inside its scope; an array's `items` is the scope of its
    elements. An object is `declared` when the contract names it, else it is implied by the
    paths under it. `personal` marks a value no person may read (masked where shown).
    """

    path: Path
    json_type: JsonType
    required: bool
    nullable: bool
    unique: bool
    checks: tuple[Check, ...]
    items: Scope | None = None
    declared: bool = True
    personal: bool = False

    def __post_init__(self) -> None:
        for one in self.checks:  # every check declared, its arguments ones it takes
            try:
                one.arguments  # noqa: B018
            except CheckError as err:
                raise ContractError(f"{self.path}: {err}") from err

    @property
    def name(self) -> str:
        """The path as printed (`data.customer.email`, `data["app.name"]`)."""
        return str(self.path)

    @property
    def is_object(self) -> bool:
        return self.json_type.name == "object"

    @property
    def is_array(self) -> bool:
        return self.json_type.name == "array"

    @property
    def is_timestamp(self) -> bool:
        """A string the contract reads as an instant (`iso_timestamp`): written as a timestamp."""
        return any(c.name == "iso_timestamp" for c in self.checks)


@dataclass(frozen=True)
class Scope:
    """The slots judged together: the message's, or one array element's. Parents come before
    the slots under them. `strict` says what an unknown field is (True: a reason; False: kept;
    "filter": dropped). An element scope of `scalar` items has one slot, the element itself
    (`SCALAR_ITEM`)."""

    fields: tuple[FieldRule, ...]
    strict: bool | str = False
    scalar: bool = False

    def declared_objects_above(self, path: Path) -> list[FieldRule]:
        """The declared objects a slot lies under, outermost first."""
        objects = self.objects
        return [objects[p] for p in path.ancestors() if p in objects]

    @property
    def objects(self) -> dict[Path, FieldRule]:
        return {f.path: f for f in self.fields if f.is_object and f.declared}

    def children(self, parent: Path) -> Iterator[FieldRule]:
        """The slots right under `parent` (the scope itself: `Path()`), in order."""
        for rule in self.fields:
            if rule.path.parent == parent:
                yield rule


SCALAR_ITEM = "value"  # the one slot of an element scope of scalars


@dataclass(frozen=True)
class PythonCheck:
    """A check the model does not know, written in Python by the contract's author (pandera's
    `register_check_method`): a back-end runs the author's own code (`check`, opaque here)."""

    path: Path
    name: str
    statistics: dict[str, Any]
    dtype: str  # the author's dtype of the field, as the reference types its one-row frame
    check: Any = field(compare=False, repr=False)

    @property
    def field(self) -> str:
        return str(self.path)

    @property
    def rule(self) -> str:
        return rule_id(self.path, self.name, self.statistics)


@dataclass(frozen=True)
class Key:
    """The message's unique key: one field, or several in order. Printed as its field's path,
    or its fields' in parentheses (`(carrier,tracking_no)`); a key of several fields has the
    JSON array of its values as text for its value (`["DHL","1Z99"]`)."""

    paths: tuple[Path, ...]

    def __post_init__(self) -> None:
        if not self.paths:
            raise ContractError("a key names at least one field")

    def __str__(self) -> str:
        return str(self.paths[0]) if len(self.paths) == 1 else "(" + ",".join(map(str, self.paths)) + ")"


@dataclass(frozen=True)
class Contract:
    """A dataset's contract, whichever front-end read it."""

    name: str
    fields: tuple[FieldRule, ...]
    frame_checks: tuple[Check, ...] = ()
    python_checks: tuple[PythonCheck, ...] = ()
    strict: bool | str = False
    source: str = ""  # where it was read from, for a person: `contracts.orders:Orders`, a file
    # A JSON Schema contract's schema (`foodtaster.contract.json_schema.JsonSchemaDoc`): it judges
    # every message; `fields` are then the typed view valid/ holds, judged by no rule of their own.
    schema: Any = field(default=None, compare=False)
    # A key of several fields (pandera's `Config.unique`, an ODCS primary key of several
    # properties), in its order; a key of one field is that field's `unique`.
    key: tuple[Path, ...] = ()
    # Batch-gate expectations the contract itself states (`foodtaster.contract.odcs.Expectation`),
    # added to the dataset's suite; and what the document says that judges nothing, listed.
    expectations: tuple[Any, ...] = ()
    passed_over: tuple[str, ...] = ()

    @property
    def judged_by_schema(self) -> bool:
        return self.schema is not None

    @property
    def scope(self) -> Scope:
        return Scope(self.fields, self.strict)

    @property
    def unique_fields(self) -> list[Path]:
        return [f.path for f in self.fields if f.unique]

    @property
    def message_key(self) -> tuple[Path, ...]:
        """The message's unique key: its fields in order (one or several), or none."""
        return self.key or tuple(self.unique_fields)

    @property
    def keeps_unknown(self) -> bool:
        """The valid rows carry the fields the contract does not name (strict False)."""
        return self.strict is False

    def slot(self, path: str | Path) -> FieldRule:
        wanted = Path.parse(path) if isinstance(path, str) else path
        for rule in self.fields:
            if rule.path == wanted:
                return rule
        raise ContractError(f"{self.name} has no field {str(wanted)!r}; its fields: "
                            + ", ".join(f.name for f in self.fields if not f.is_object))

    def walk(self) -> Iterator[tuple[Path, FieldRule]]:
        """Every slot at every depth with its full pattern (`data.lines[].qty`), parents first."""
        yield from _walk(self.scope, Path())


def _walk(scope: Scope, base: Path) -> Iterator[tuple[Path, FieldRule]]:
    for rule in scope.fields:
        where = base / rule.path
        yield where, rule
        if rule.items is not None:
            inner = where.each()
            if rule.items.scalar:
                yield inner, rule.items.fields[0]
            else:
                yield from _walk(rule.items, inner)
