"""A contract's rules as Spark columns, on the strict parser's slots (`layers.parse`).

Every slot of the message is one column group (value, status, text), objects flattened by
path; an array's value is its elements, each a struct of its own slots, judged by higher-order
functions: `exists` in the cheap pass, `transform` to say which element failed. A reason's
`column` is the exact path of the failing value (`data.lines[2].qty`), its `rule` the path's
pattern (`data.lines[].qty.greater_than_or_equal_to(1)`), so counts group by rule.

What a rule means is pandera's: `tests/integration/test_differential.py` holds the two to
the same verdict, the flat and the nested contract alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from foodtaster.contract.checks import COMPARISONS
from foodtaster.contract.model import (
    Contract,
    FieldRule,
    Scope,
    frame_rule_id,
    render,
    rule_id,
)
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers, parser_spec, schema_judge
from foodtaster.engine.judging.layers import FieldStatus
from foodtaster.engine.judging.reasons import REASONS, Check, any_failed, check, collect
from foodtaster.engine.judging.rules import SPARK, output_type, parsed_type

# What the value of an `out_of_range` field is, by the field's type.
OUT_OF_RANGE_WORDS = {
    "integer": "is an integer beyond 64 bits (-9223372036854775808..9223372036854775807)",
    "number": "is a number no double holds: beyond ±1.8e308, or so close to 0 that it would read as 0",
}
TYPE_WORDS = {"date": "a calendar date (a JSON string YYYY-MM-DD)", "array": "a JSON array",
              "object": "a JSON object", "integer": "a JSON integer"}


def _out_of_range_words(rule: FieldRule) -> str | None:
    if rule.json_type.name == "decimal":
        return f"does not fit decimal({rule.json_type.precision},{rule.json_type.scale}) (never rounded)"
    return OUT_OF_RANGE_WORDS.get(rule.json_type.name)


@dataclass(frozen=True)
class Slots:
    """Where one scope's slots are read, and how its reasons name them: the message's own
    columns (`element` None), or one array element's struct, whose reasons name the element
    (`data.lines[2]`) and whose rules name the pattern (`data.lines[]`)."""

    read: Callable[[Path, str], Column]  # (slot, "value" | "status" | "text") -> its column
    element: Column | None = None  # the element's exact path, at an element
    pattern: Path = Path()  # the element's path pattern, at an element
    # Only what valid/ cannot hold (`out_of_range`): a JSON Schema contract's schema judges the rest.
    representation_only: bool = False
    # The message's arrays whose elements the parser judged (`parser_spec.judged_arrays`).
    judged: frozenset[Path] = frozenset()

    def rule(self, name: Path) -> str:
        return str(self.pattern / name)

    def column(self, name: Path) -> str | Column:
        if self.element is None:
            return str(name)
        return F.concat(self.element, F.lit(_tail(name))) if name else self.element

    def words(self, name: Path, words: str) -> str | Column:
        """A message about a slot: its exact path, then the words."""
        where = self.column(name)
        return f"{where} {words}" if isinstance(where, str) else F.concat(where, F.lit(" " + words))


def _tail(path: Path) -> str:
    """A relative path as printed after an element's path (`.qty`, `["a.b"]`)."""
    return str(Path.of("_") / path)[1:]


def message_slots(representation_only: bool = False, judged: frozenset[Path] = frozenset()) -> Slots:
    parts = {"value": layers.value_column, "status": layers.status_column, "text": layers.text_column,
             "passed": layers.passed_column, "written": layers.written_elements_column}
    return Slots(lambda name, part: F.col(parts[part](name)), representation_only=representation_only,
                 judged=judged)


def _element_slots(element: Column, scope: Scope, path: Column | None, pattern: Path,
                   representation_only: bool = False) -> Slots:
    if scope.scalar:
        return Slots(lambda name, part: element.getField("_" + part), path, pattern, representation_only)
    return Slots(lambda name, part: element.getField(layers.slot_name(name, part)), path, pattern,
                 representation_only)


_BUILT_CHECKS: dict[tuple[str, int], list[Check]] = {}


def field_checks(contract: Contract) -> list[Check]:
    """Every row-level rule of the contract as a reason column (uniqueness is the dedup step's).
    Reads the columns of `layers.parse`.

    Built once a contract and Spark context: each Column is a few Py4J calls, and a contract's
    checks are a thousand of them (about a second on two cores).
    """
    key = (repr(contract), id(SparkContext._active_spark_context))
    if key not in _BUILT_CHECKS:
        _BUILT_CHECKS.clear()  # Columns of a stopped context are of no use
        if contract.judged_by_schema:
            # what valid/ cannot hold matters only where the schema admits the message
            judged = schema_judge.schema_check()
            admitted = ~judged.failed
            _BUILT_CHECKS[key] = [
                *(_only_where(admitted, one)
                  for one in scope_checks(contract.scope, message_slots(representation_only=True))),
                judged,
            ]
            return _BUILT_CHECKS[key]
        _BUILT_CHECKS[key] = [
            *scope_checks(contract.scope, message_slots(judged=parser_spec.judged_arrays(contract))),
            *_unexpected_checks(),
            *_python_field_checks(contract),
            *_frame_checks(contract),
        ]
    return _BUILT_CHECKS[key]


def scope_checks(scope: Scope, slots: Slots) -> list[Check]:
    """The rules of every slot of a scope. A slot under a declared object that is absent or null
    is not judged: the object's own rules say what is wrong."""
    checks = []
    for rule in scope.fields:
        above = [slots.read(o.path, "status") for o in scope.declared_objects_above(rule.path)]
        judged = None
        for status in above:
            present = ~status.isin(FieldStatus.MISSING, FieldStatus.NULL)
            judged = present if judged is None else judged & present
        checks += [one if judged is None else _only_where(judged, one) for one in _slot_checks(rule, slots)]
    return checks


def _only_where(judged: Column, one: Check) -> Check:
    """A check that applies only where `judged` holds."""
    return Check(one.failed & judged, F.when(judged, one.reason).otherwise(F.array().cast(REASONS)))


def _slot_checks(rule: FieldRule, slots: Slots) -> list[Check]:
    status, text = slots.read(rule.path, "status"), slots.read(rule.path, "text")
    name, column = rule.path, slots.column(rule.path)
    checks = []
    if slots.representation_only:
        return _representation_checks(rule, slots)
    if rule.declared:
        checks.append(check((status == FieldStatus.MISSING) & F.lit(rule.required), "contract",
                            f"{slots.rule(name)}.required",
                            _required_words(slots, name), column=column))
        checks.append(check((status == FieldStatus.NULL) & F.lit(not rule.nullable), "contract",
                            f"{slots.rule(name)}.not_nullable", slots.words(name, "must not be null"),
                            column=column))
    wrong = status >= FieldStatus.WRONG_TYPE
    if rule.json_type.name == "date":
        wrong = wrong | (status == FieldStatus.INVALID)
    expected = TYPE_WORDS.get(rule.json_type.name, f"a JSON {rule.json_type.word}")
    found = F.coalesce(layers.found_type(status), F.concat(F.lit("the string "), text))
    checks.append(check(wrong, "contract", f"{slots.rule(name)}.type({rule.json_type.word})",
                        _concat(slots.words(name, f"must be {expected}, got "), found),
                        column=column, value=text))
    beyond = _out_of_range_words(rule)
    if beyond is not None:
        checks.append(check(status == FieldStatus.OUT_OF_RANGE, "contract",
                            f"{slots.rule(name)}.out_of_range", slots.words(name, beyond),
                            column=column, value=text))
    if rule.is_object:
        return checks
    value = slots.read(name, "value")
    what, measured = (name, value)
    judged = name in slots.judged
    if rule.is_array:
        # a judged array's elements come back only where one fails: its written ones are counted
        measured = F.when(status == FieldStatus.OK, F.size(slots.read(name, "written") if judged else value))
    for one in rule.checks:
        passes = SPARK[one.name](measured, one.arguments, "integer" if rule.is_array else rule.json_type.name)
        words = f"length {one.reason}" if rule.is_array else one.reason
        checks.append(check(measured.isNotNull() & ~passes, "contract",
                            rule_id(slots.rule(what), one.name, one.statistics), slots.words(name, words),
                            column=column, value=measured))
    if rule.items is not None:
        passed = slots.read(name, "passed") if judged else None
        checks.append(_elements_check(rule, value, slots, passed))
    return checks


def _representation_checks(rule: FieldRule, slots: Slots) -> list[Check]:
    """A value the schema accepts that its valid/ column cannot hold: `out_of_range`, and the
    same inside every element (docs/judging.md, "JSON Schema contracts")."""
    status = slots.read(rule.path, "status")
    checks = []
    beyond = _out_of_range_words(rule)
    # a number no double holds is the schema judge's (`schema_judge`): it finds it at any place
    if beyond is not None and rule.json_type.name != "number":
        checks.append(check(status == FieldStatus.OUT_OF_RANGE, "contract",
                            f"{slots.rule(rule.path)}.out_of_range", slots.words(rule.path, beyond),
                            column=slots.column(rule.path), value=slots.read(rule.path, "text")))
    if rule.items is not None:
        checks.append(_elements_check(rule, slots.read(rule.path, "value"), slots))
    return checks


def _required_words(slots: Slots, name: Path) -> str | Column:
    where = slots.column(name)
    if isinstance(where, str):
        return f"required field {where} is missing"
    return F.concat(F.lit("required field "), where, F.lit(" is missing"))


def _concat(words: str | Column, found: Column) -> Column:
    return F.concat(F.lit(words) if isinstance(words, str) else words, found)


def _elements_check(rule: FieldRule, elements: Column, slots: Slots, passed: Column | None = None) -> Check:
    """One check for every element of an array: failed where any element fails, and a reason
    for each failing rule of each element, naming the element by its index. With `passed`, the
    parser's verdict on the elements, the cheap pass reads it in place of `exists` (the reasons
    still run `exists` and `transform`, on the failed messages only)."""
    scope = rule.items
    assert scope is not None
    pattern = slots.pattern / rule.path.each()
    array_path = slots.column(rule.path)

    def element_checks(element: Column, index: Column | None) -> list[Check]:
        # The cheap pass needs only whether an element fails: no index, so no path is built.
        path = F.lit("")
        if index is not None:
            start = F.lit(array_path) if isinstance(array_path, str) else array_path
            path = F.concat(start, F.lit("["), index.cast("string"), F.lit("]"))
        inner = _element_slots(element, scope, path, pattern, slots.representation_only)
        if scope.scalar:
            return _slot_checks(_as_element(scope.fields[0]), inner)
        status = element.getField("_status")
        if slots.representation_only:
            return [_only_where(status == FieldStatus.OK, one) for one in scope_checks(scope, inner)]
        checks = [
            check(status == FieldStatus.NULL, "contract", f"{str(pattern)}.not_nullable",
                  F.concat(path, F.lit(" must not be null")), column=path),
            check(status >= FieldStatus.WRONG_TYPE, "contract", f"{str(pattern)}.type(object)",
                  F.concat(path, F.lit(" must be a JSON object, got "), layers.found_type(status)),
                  column=path, value=element.getField("_text")),
        ]
        return checks + [_only_where(status == FieldStatus.OK, one) for one in scope_checks(scope, inner)]

    failed = F.coalesce(F.exists(elements, lambda e: any_failed(element_checks(e, None))), F.lit(False))
    reasons = F.flatten(F.transform(elements, lambda e, i: collect(element_checks(e, i))))
    empty = F.array().cast(REASONS)
    reason = F.when(failed, F.coalesce(reasons, empty)).otherwise(empty).cast(REASONS)
    if passed is not None:
        failed = F.coalesce(~passed, F.lit(False))
    return Check(failed, reason)


def _as_element(rule: FieldRule) -> FieldRule:
    """An array of scalars' one slot, named by the element itself (`data.tags[3]`)."""
    return replace(rule, path=Path())


def _unexpected_checks() -> list[Check]:
    """A field a strict scope does not name: one reason each, its rule the path's pattern."""
    unexpected = F.col(layers.UNEXPECTED)
    failed = F.coalesce(F.size(unexpected) > 0, F.lit(False))
    reasons = F.transform(unexpected, lambda found: F.struct(
        F.lit("contract").alias("layer"),
        F.concat(found.getField("pattern"), F.lit(".unexpected")).alias("rule"),
        found.getField("path").alias("column"),
        F.concat(F.lit("unexpected field "), found.getField("path"),
                 F.lit(": the contract is strict (Config.strict = True)")).alias("message"),
        F.lit(None).cast("string").alias("value"),
    ))
    empty = F.array().cast(REASONS)
    return [Check(failed, F.when(failed, reasons).otherwise(empty).cast(REASONS))]


def _python_field_checks(contract: Contract) -> list[Check]:
    """A Python check fails where its verdict column (`with_python_checks`) is false."""
    return [
        check(~F.col(layers.python_check_column(c)), "contract", c.rule,
              f"{c.field} fails the check {c.rule}",
              column=c.field, value=F.col(layers.value_column(c.path)))
        for c in contract.python_checks
    ]


def _frame_checks(contract: Contract) -> list[Check]:
    """Cross-field checks; a comparison with a missing or wrongly typed value fails, as in pandas."""
    def typed(name: str) -> Column:
        return F.col(layers.value_column(Path.parse(name)))

    checks = []
    for _, s in contract.frame_checks:
        applies = F.coalesce(typed(s["if_column"]).isin(*s["if_in"]), F.lit(False))
        compare = COMPARISONS[s["then_check"]]
        holds = F.coalesce(compare.test(typed(s["then_column"]), s["then_value"]), F.lit(False))
        condition = f"{s['if_column']} in ({','.join(map(str, s['if_in']))})"
        checks.append(
            check(
                applies & ~holds, "contract", frame_rule_id(s),
                f"{s['then_column']} must be {compare.sign} "
                f"{render(s['then_value'])} when {condition}",
                column=s["then_column"], value=typed(s["then_column"]),
            )
        )
    return checks


# ---- the typed message ---------------------------------------------------------------------


def message_columns(contract: Contract) -> list[Column]:
    """The message as written to valid/: one column a top-level key, objects as structs, arrays
    of objects as arrays of structs, each leaf typed (a date, a decimal, a timestamp for an
    `iso_timestamp` string). Reads the columns of `layers.parse`."""
    return _object_fields(contract.scope, message_slots(judged=parser_spec.judged_arrays(contract)), Path())


def message_keys(contract: Contract) -> list[str]:
    """The top-level keys `message_columns` writes, in order."""
    return [str(f.path.last) for f in contract.scope.children(Path())]


def _object_fields(scope: Scope, slots: Slots, parent: Path) -> list[Column]:
    return [_slot_output(scope, rule, slots).alias(str(rule.path.last)) for rule in scope.children(parent)]


def _slot_output(scope: Scope, rule: FieldRule, slots: Slots) -> Column:
    status, value = slots.read(rule.path, "status"), slots.read(rule.path, "value")
    if rule.is_object:
        return F.when(status == FieldStatus.OK, F.struct(*_object_fields(scope, slots, rule.path)))
    if rule.path in slots.judged:
        return slots.read(rule.path, "written")  # the parser wrote the elements as valid/ holds them
    if rule.items is not None:
        items = rule.items
        return F.transform(value, lambda e: _element_output(e, items))
    return _typed(rule, value)


def _element_output(element: Column, scope: Scope) -> Column:
    inner = _element_slots(element, scope, None, Path())
    if scope.scalar:
        return _typed(scope.fields[0], element.getField("_value"))
    ok = element.getField("_status") == FieldStatus.OK
    return F.when(ok, F.struct(*_object_fields(scope, inner, Path())))


def _typed(rule: FieldRule, value: Column) -> Column:
    if isinstance(output_type(rule), TimestampType):
        return layers.iso_timestamp(value)  # a quarantined row's unshaped text is not guessed at
    if rule.json_type.name == "date":
        return value.cast("date")  # the parser let through only real dates, as YYYY-MM-DD
    return value


def carried_value(rule: FieldRule) -> bool:
    """Whether the reasons need the slot's parsed value carried from the pass: the written
    column differs from it (a timestamp or date read from a string, elements reshaped)."""
    if rule.is_object:
        return False
    return rule.is_array or output_type(rule) != parsed_type(rule.json_type)
