"""The checks a contract may use, each declared once: its name, its typed arguments, its reason.

As pandera's `register_builtin_check`: a declaration says what a check *is* (here, importing no
engine); each back end registers what it *means* by name in a `Meanings` of its own, the
Spark columns (`foodtaster.engine.judging.rules.SPARK`), the strict parser's spec
(`foodtaster.engine.judging.parser_spec.PARSER`) and the pandas oracle (`foodtaster.checks.PANDAS`).
`tests/unit/test_check_registry.py` fails when a back end lacks a declared check, and names it.
Adding a check is its declaration here and one registration a back end
(docs/decisions/043-one-registry-of-checks.md).

A check's arguments are pandera's statistics by name (`min_value`, `allowed_values`); a contract
keeps them as written (its rule ids print them), and `Declared.read` gives them typed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from datetime import date
from decimal import Decimal
from typing import Any, Generic, TypeVar

from foodtaster.errors import UsageError

Bound = int | float | Decimal | date | str  # what a comparison compares a value with


class CheckError(UsageError):
    """A check no declaration knows, or arguments its declaration does not take."""


def render(value: Any) -> str:
    """A number as a person writes it: `5`, not `5.0`."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _words(value: Any) -> str:
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(map(str, value))
    return render(value)


# ---- the comparisons, spelled here once --------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """A comparison of a value with a bound: its check name, its sign for a person, the name of
    its argument (pandera's), and the test itself (an operator: numbers and Spark columns alike)."""

    name: str
    sign: str
    argument: str
    test: Callable[[Any, Any], Any]


COMPARISONS: dict[str, Comparison] = {c.name: c for c in (
    Comparison("greater_than", ">", "min_value", operator.gt),
    Comparison("greater_than_or_equal_to", ">=", "min_value", operator.ge),
    Comparison("less_than", "<", "max_value", operator.lt),
    Comparison("less_than_or_equal_to", "<=", "max_value", operator.le),
    Comparison("equal_to", "==", "value", operator.eq),
    Comparison("not_equal_to", "!=", "value", operator.ne),
)}


# ---- arguments, typed ------------------------------------------------------------------------


@dataclass(frozen=True)
class NoArguments:
    pass


@dataclass(frozen=True)
class AtLeast:
    min_value: Bound


@dataclass(frozen=True)
class AtMost:
    max_value: Bound


@dataclass(frozen=True)
class Exactly:
    value: Bound


@dataclass(frozen=True)
class InRange:
    min_value: Bound
    max_value: Bound
    include_min: bool = True
    include_max: bool = True


@dataclass(frozen=True)
class Allowed:
    allowed_values: list[Any]


@dataclass(frozen=True)
class Forbidden:
    forbidden_values: list[Any]


@dataclass(frozen=True)
class Pattern:
    pattern: str


@dataclass(frozen=True)
class Text:
    string: str


@dataclass(frozen=True)
class Length:
    min_value: int | None = None
    max_value: int | None = None
    exact_value: int | None = None


@dataclass(frozen=True)
class MultipleOf:
    """JSON Schema's `multipleOf`: an integer or a decimal is a multiple of the divisor as
    written (`0.01`), exactly; a number (a double) is one where its quotient by the divisor is a
    whole double, as the `jsonschema` library reads it: docs/decisions/044-multiple-of.md."""

    value: int | float

    def __post_init__(self) -> None:
        v = self.value
        number = isinstance(v, int | float) and not isinstance(v, bool)
        if not number or not 0 < v < float("inf"):
            raise CheckError(f"multiple_of takes a number above 0, not {v!r}")
        digits = self.exact.as_tuple()
        if not isinstance(digits.exponent, int) or digits.exponent < -18 or self.exact.adjusted() > 18:
            raise CheckError(f"multiple_of {v!r}: a divisor has at most 18 digits before the point "
                             "and 18 after it")

    @property
    def exact(self) -> Decimal:
        """The divisor as written: a float's shortest decimal form (`0.01`, not its binary value)."""
        return Decimal(repr(self.value)) if isinstance(self.value, float) else Decimal(self.value)


def _length_words(a: Length) -> str:
    if a.exact_value is not None:
        return f"must be exactly {a.exact_value} characters"
    bounds = [f"at least {a.min_value}"] if a.min_value is not None else []
    bounds += [f"at most {a.max_value}"] if a.max_value is not None else []
    return f"must be {' and '.join(bounds)} characters long"


# ---- declarations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """A check as the contract knows it: its name, its arguments' type, and its reason: a
    template of the arguments by name (each printed as a person writes it), or a function."""

    name: str
    arguments: type
    reason_template: str | Callable[[Any], str]

    @property
    def argument_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self.arguments))

    def read(self, statistics: Mapping[str, Any]) -> Any:
        """The arguments typed; an argument the check does not take, or lacks, refused by name."""
        unknown = sorted(set(statistics) - set(self.argument_names))
        if unknown:
            raise CheckError(f"check {self.name} takes no argument {', '.join(unknown)}; it takes "
                             f"{', '.join(self.argument_names) or 'none'}")
        needed = [f.name for f in fields(self.arguments)
                  if f.default is MISSING and f.name not in statistics]
        if needed:
            raise CheckError(f"check {self.name} needs {', '.join(needed)}")
        # pandera writes an absent optional argument as None: the default says it
        return self.arguments(**{k: v for k, v in statistics.items() if v is not None})

    def reason(self, arguments: Any) -> str:
        """What a failing value must be, for a person: `must be >= 0`."""
        if callable(self.reason_template):
            return self.reason_template(arguments)
        return self.reason_template.format(**{f.name: _words(getattr(arguments, f.name))
                                              for f in fields(arguments)})


DECLARED: dict[str, Declared] = {}


def declare(name: str, arguments: type, reason: str | Callable[[Any], str]) -> Declared:
    if name in DECLARED:
        raise CheckError(f"check {name} is declared twice")
    DECLARED[name] = Declared(name, arguments, reason)
    return DECLARED[name]


_BOUND_TYPES = {"min_value": AtLeast, "max_value": AtMost, "value": Exactly}
for _c in COMPARISONS.values():
    declare(_c.name, _BOUND_TYPES[_c.argument], f"must be {_c.sign} {{{_c.argument}}}")
declare("in_range", InRange, "must be in range {min_value}..{max_value}")
declare("isin", Allowed, "must be one of {allowed_values}")
declare("notin", Forbidden, "must not be one of {forbidden_values}")
declare("str_matches", Pattern, "must match {pattern}")
declare("str_contains", Pattern, "must contain a match of {pattern}")
declare("str_startswith", Text, "must start with {string}")
declare("str_endswith", Text, "must end with {string}")
declare("str_length", Length, _length_words)
declare("iso_timestamp", NoArguments, "must be an ISO-8601 timestamp with a zone offset or Z")
declare("multiple_of", MultipleOf, "must be a multiple of {value}")


def declared(name: str) -> Declared:
    try:
        return DECLARED[name]
    except KeyError:
        raise CheckError(f"no check {name!r}; known: {', '.join(sorted(DECLARED))}") from None


# ---- a back end's meanings -------------------------------------------------------------------

M = TypeVar("M")


class Meanings(Generic[M]):
    """What each declared check means to one back end, registered by name. A back end that
    cannot give a check its meaning registers None for it (the strict parser then leaves the
    array to Spark), so a check it never heard of stays apart from one it declines."""

    def __init__(self, back_end: str) -> None:
        self.back_end = back_end
        self._meanings: dict[str, M | None] = {}

    def register(self, name: str) -> Callable[[M], M]:
        """A decorator: `@SPARK.register("in_range")`."""
        def add(meaning: M) -> M:
            self.add(name, meaning)
            return meaning

        return add

    def add(self, name: str, meaning: M | None) -> None:
        declared(name)  # a meaning for no declared check is a typo
        if name in self._meanings:
            raise CheckError(f"{self.back_end}: check {name} has a meaning already")
        self._meanings[name] = meaning

    def get(self, name: str) -> M | None:
        """The check's meaning here, None where this back end declines it."""
        if name not in self._meanings:
            raise CheckError(f"{self.back_end} has no meaning for check {name}")
        return self._meanings[name]

    def __getitem__(self, name: str) -> M:
        meaning = self.get(name)
        if meaning is None:
            raise CheckError(f"{self.back_end} gives check {name} no meaning")
        return meaning

    def lacking(self) -> list[str]:
        """The declared checks this back end has not registered (neither a meaning nor None)."""
        return [name for name in DECLARED if name not in self._meanings]

    def __iter__(self) -> Iterator[str]:
        return iter(self._meanings)
