"""What the strict parser is asked for (`parser_input`): the contract's slots, and the arrays
whose elements it judges itself.

An array of the message's level whose element rules the parser can judge exactly as their Spark
columns (`rules.SPARK`) do is judged in the parser's one pass: it returns, beside the
array's slots, whether every element passes and the elements as written to valid/, so the cheap
pass reads one boolean and one column instead of running Spark's higher-order functions over the
elements (`exists`, `transform`: outside whole-stage code generation), and the elements with their
statuses come back only on a message where one fails, for the reasons
(docs/decisions/025-element-rules-judged-in-the-parser.md). Any other array keeps `exists`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from foodtaster.contract import checks
from foodtaster.contract.checks import COMPARISONS, Meanings
from foodtaster.contract.model import Contract, FieldRule, Scope
from foodtaster.contract.path import Path
from foodtaster.engine.judging import layers
from foodtaster.engine.judging.reasons import REASONS, VALUE_MAX_CHARS
from foodtaster.engine.judging.rules import output_type, parsed_type, python_regex

NUMBERS = ("integer", "number", "decimal")
Rule = dict[str, Any]
RuleForms = Callable[[str, Any], list[Rule] | None]  # a check's rules on a JSON type, its arguments

# The parser's rules for each declared check (`foodtaster.contract.checks`) on a slot of a JSON
# type, or None where the parser cannot judge it exactly as its Spark column (`rules.SPARK`)
# does: the array then keeps `exists`. A check registered as None is never judged here.
PARSER: Meanings[RuleForms] = Meanings("the strict parser's spec")


def _bound(value: Any) -> Rule | None:
    """A comparison's bound as the parser reads it, or None where it cannot compare as Spark
    does (a bool, a string, an infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return {"bound": repr(value), "exact": isinstance(value, int)}


def _compare(op: str, value: Any) -> Rule | None:
    bound = _bound(value)
    return None if bound is None else {"check": "compare", "op": op, **bound}


def _on(json_types: tuple[str, ...], rule: Callable[[Any], Rule | None]) -> RuleForms:
    """A check of one rule, judged on slots of these JSON types only."""
    def forms(json_type: str, a: Any) -> list[Rule] | None:
        one = rule(a) if json_type in json_types else None
        return None if one is None else [one]

    return forms


def _strings(rule: Callable[[Any], Rule | None]) -> RuleForms:
    return _on(("string",), rule)


def _comparison(c: checks.Comparison) -> RuleForms:
    return _on(NUMBERS, lambda a: _compare(c.sign, getattr(a, c.argument)))


for _name, _c in COMPARISONS.items():
    PARSER.add(_name, _comparison(_c))


@PARSER.register("in_range")
def _in_range(json_type: str, a: checks.InRange) -> list[Rule] | None:
    if json_type not in NUMBERS:
        return None
    low = _compare(">=" if a.include_min else ">", a.min_value)
    high = _compare("<=" if a.include_max else "<", a.max_value)
    return None if low is None or high is None else [low, high]


def _listed(values: list[Any], negate: bool) -> Rule | None:
    if not all(isinstance(v, str) for v in values):
        return None
    return {"check": "in", "values": list(values), "negate": negate}


PARSER.add("isin", _strings(lambda a: _listed(a.allowed_values, negate=False)))
PARSER.add("notin", _strings(lambda a: _listed(a.forbidden_values, negate=True)))
PARSER.add("str_matches", _strings(lambda a: {"check": "regex",
                                              "pattern": python_regex("^(?:" + a.pattern + ")")}))
PARSER.add("str_contains", _strings(lambda a: {"check": "regex", "pattern": python_regex(a.pattern)}))
PARSER.add("str_startswith", _strings(lambda a: {"check": "prefix", "text": a.string}))
PARSER.add("str_endswith", _strings(lambda a: {"check": "suffix", "text": a.string}))
PARSER.add("str_length", _strings(lambda a: {"check": "length", "min": a.min_value, "max": a.max_value,
                                             "exact": a.exact_value}))
# a timestamp's slot is written as another type than the parser reads: never judged here
PARSER.add("iso_timestamp", None)
# not judged in the parser (yet): an array with it keeps Spark's `exists`
PARSER.add("multiple_of", None)


def _slot_rules(rule: FieldRule) -> Rule | None:
    """What the parser judges on an element slot (its presence, null and rules), or None where it
    cannot judge it: an object, an array, JSON text, or a value written as another type (a date,
    a timestamp)."""
    if rule.is_object or rule.is_array or rule.json_type.name == "json":
        return None
    if output_type(rule) != parsed_type(rule.json_type):
        return None
    checks: list[Rule] = []
    for check in rule.checks:
        one = PARSER.get(check.name)
        forms = one(rule.json_type.name, check.arguments) if one else None
        if forms is None:
            return None
        checks += forms
    return {"required": rule.declared and rule.required, "nullable": not rule.declared or rule.nullable,
            "checks": checks}


def judged_arrays(contract: Contract) -> frozenset[Path]:
    """The message's arrays whose elements the parser judges: every element rule one it can
    judge, the element scope flat (no object or array inside), no Python check on the array, and
    not a JSON Schema contract's (its schema judges the elements)."""
    if contract.judged_by_schema:
        return frozenset()
    python = {c.path for c in contract.python_checks}
    return frozenset(
        f.path for f in contract.fields
        if f.items is not None and f.path not in python and _items_rules(f.items) is not None
    )


def _items_rules(scope: Scope) -> list[Rule] | None:
    if not scope.scalar and any(len(f.path.keys) != 1 for f in scope.fields):
        return None
    found = [_slot_rules(f) for f in scope.fields]
    return None if any(one is None for one in found) else [one for one in found if one is not None]


def _slot_spec(rule: FieldRule, judged: frozenset[Path] = frozenset(), *,
               path: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": rule.json_type.name}
    if path:
        spec["path"] = list(rule.path.keys)
    if rule.json_type.name == "decimal":
        spec["precision"] = rule.json_type.precision
        spec["scale"] = rule.json_type.scale
    if rule.items is not None:
        spec["items"] = _items_spec(rule.items, rule.path in judged)
    return spec


def _items_spec(scope: Scope, judge: bool) -> dict[str, Any]:
    rules = _items_rules(scope) if judge else None
    if scope.scalar:
        spec = _slot_spec(scope.fields[0], path=False)
        if rules is not None:
            spec.update(judge=True, nullable=rules[0]["nullable"], checks=rules[0]["checks"])
        return spec
    fields = [_slot_spec(f) for f in scope.fields]
    if rules is not None:
        fields = [{**one, **rules[k]} for k, one in enumerate(fields)]
    spec = {"type": "object", "strict": scope.strict, "fields": fields}
    return {**spec, "judge": True} if rules is not None else spec


def _element_type(scope: Scope) -> StructType:
    own = [StructField("_status", IntegerType(), True), StructField("_text", StringType(), True)]
    if scope.scalar:
        return StructType([*own, StructField("_value", _parsed_type(scope.fields[0]), True)])
    return StructType(own + _slot_fields(scope.fields))


def written_type(scope: Scope) -> ArrayType:
    """A judged array's elements as written to valid/ (what `row_checks.message_columns` writes)."""
    if scope.scalar:
        return ArrayType(output_type(scope.fields[0]), True)
    fields = [StructField(str(f.path.last), output_type(f), True) for f in scope.fields]
    return ArrayType(StructType(fields), True)


def _parsed_type(rule: FieldRule) -> DataType:
    if rule.items is not None:
        return ArrayType(_element_type(rule.items), True)
    return parsed_type(rule.json_type)


def _slot_fields(fields: tuple[FieldRule, ...]) -> list[StructField]:
    out = []
    for rule in fields:
        out += [StructField(slot_name(rule), _parsed_type(rule), True),
                StructField(slot_name(rule, "status"), IntegerType(), True),
                StructField(slot_name(rule, "text"), StringType(), True)]
    return out


def parser_input(contract: Contract, max_message_bytes: int) -> layers.ParserInput:
    """What `layers.parse` hands the strict parser for this contract, and the shape it returns."""
    judged = judged_arrays(contract)
    spec = {"max_bytes": max_message_bytes, "value_chars": VALUE_MAX_CHARS, "strict": contract.strict,
            "fields": [_slot_spec(f, judged) for f in contract.fields]}
    if contract.judged_by_schema:  # JSON Schema's integer is any whole number: 1.0 and 1e2 are
        spec["whole_numbers"] = True
    arrays = [f for f in contract.fields if f.path in judged]
    extra = []
    for rule in arrays:
        assert rule.items is not None
        extra += [StructField(slot_name(rule, "passed"), BooleanType(), True),
                  StructField(slot_name(rule, "written"), written_type(rule.items), True)]
    returns = StructType([StructField("reasons", REASONS, True), *_slot_fields(contract.fields),
                          StructField(layers.UNEXPECTED, layers.UNEXPECTED_TYPE, True),
                          StructField(layers.UNKNOWN, layers.UNKNOWN_TYPE, True), *extra])
    return layers.ParserInput(json.dumps(spec, separators=(",", ":")), returns,
                              tuple(f.path for f in contract.fields), tuple(f.path for f in arrays))


def slot_name(rule: FieldRule, part: str = "value") -> str:
    """A slot's field in the parser's struct: its value, status or offending text; a judged
    array's `passed` and `written` elements (`layers.slot_name`)."""
    return layers.slot_name(rule.path, part)
