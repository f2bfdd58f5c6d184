"""The contract's rules without Spark: stable rule ids, a check without a Spark meaning refused."""

import pandera.pandas as pa
import pytest
from pandera.typing import Series

from foodtaster.contract import read_contract
from foodtaster.contract.model import ContractError, rule_id


def test_rule_ids_are_stable_and_readable():
    ge = rule_id("amount", "greater_than_or_equal_to", {"min_value": 0})
    assert ge == "amount.greater_than_or_equal_to(0)"
    assert rule_id("currency", "isin", {"allowed_values": ["USD"]}) == "currency.isin"
    in_range = rule_id("x", "in_range", {"min_value": 1, "max_value": 2.5})
    assert in_range == "x.in_range(min_value=1,max_value=2.5)"


def test_a_contract_check_without_a_spark_meaning_is_refused():
    class Odd(pa.DataFrameModel):
        a: Series[str] = pa.Field(unique_values_eq=["x"])

    with pytest.raises(ContractError, match="unique_values_eq"):
        read_contract(Odd)
