"""One registry of checks: each declared check has a meaning in every back end, or a test names it."""

from decimal import Decimal

import pytest

from foodtaster.checks import PANDAS
from foodtaster.contract import checks
from foodtaster.contract.checks import DECLARED, CheckError, Meanings, declare
from foodtaster.contract.model import Check, ContractError, FieldRule, JsonType
from foodtaster.contract.path import Path
from foodtaster.engine.judging.parser_spec import PARSER
from foodtaster.engine.judging.rules import SPARK

BACK_ENDS = (SPARK, PARSER, PANDAS)


@pytest.mark.parametrize("back_end", BACK_ENDS, ids=lambda b: b.back_end)
def test_every_back_end_gives_every_declared_check_a_meaning(back_end):
    assert back_end.lacking() == [], f"{back_end.back_end} lacks {back_end.lacking()}"


def test_a_check_declared_without_a_meaning_is_named(monkeypatch):
    monkeypatch.setattr(checks, "DECLARED", dict(DECLARED))
    declare("is_even", checks.NoArguments, "must be even")
    for back_end in BACK_ENDS:
        assert back_end.lacking() == ["is_even"]


def test_a_meaning_for_no_declared_check_or_a_second_one_is_refused():
    spark = Meanings("Spark")
    with pytest.raises(CheckError, match="no check 'is_odd'"):
        spark.add("is_odd", lambda value, a: value)
    spark.add("isin", None)
    with pytest.raises(CheckError, match="isin has a meaning already"):
        spark.add("isin", None)
    with pytest.raises(CheckError, match="Spark gives check isin no meaning"):
        spark["isin"]  # noqa: B018


def test_arguments_are_typed_and_what_a_check_does_not_take_is_refused_by_name():
    one = Check("in_range", {"min_value": 1, "max_value": 2.5, "include_min": False, "include_max": True})
    assert one.arguments == checks.InRange(1, 2.5, include_min=False)
    assert one.reason == "must be in range 1..2.5"
    assert Check("str_length", {"min_value": 2, "max_value": None}).arguments == checks.Length(min_value=2)
    assert Check("greater_than", {"min_value": 0.0}).reason == "must be > 0"
    with pytest.raises(ContractError, match=r"qty: check greater_than takes no argument max_value; it takes "
                                            r"min_value"):
        FieldRule(Path.of("qty"), JsonType("integer"), True, False, False,
                  (Check("greater_than", {"max_value": 1}),))
    with pytest.raises(ContractError, match="qty: no check 'bigger'"):
        FieldRule(Path.of("qty"), JsonType("integer"), True, False, False, (Check("bigger", {}),))
    with pytest.raises(ContractError, match="check in_range needs min_value"):
        FieldRule(Path.of("qty"), JsonType("integer"), True, False, False,
                  (Check("in_range", {"max_value": 1}),))


def test_multiple_of_takes_a_divisor_above_zero_read_as_written():
    assert Check("multiple_of", {"value": 0.01}).arguments.exact == Decimal("0.01")
    assert Check("multiple_of", {"value": 5}).reason == "must be a multiple of 5"
    for wrong in (0, -1, True, float("inf"), 1e-19, "5"):
        with pytest.raises(CheckError, match="multiple_of"):
            checks.MultipleOf(wrong)
