"""Every pandera option Foodtaster gives no meaning to is refused by name when the contract is
read (`foodtaster.contract.pandera_reader`), never accepted and silently ignored."""

from __future__ import annotations

import pandera.pandas as pa
import pytest
from pandera.typing import Series

from foodtaster.contract import read_contract
from foodtaster.contract.model import ContractError


def refused(model, *words):
    with pytest.raises(ContractError) as error:
        read_contract(model)
    for word in words:
        assert word in str(error.value), str(error.value)


def test_a_key_names_scalar_fields_of_the_message_and_a_key_of_one_field_is_its_unique():
    class Nested(pa.DataFrameModel):
        a: Series[str]
        b: Series[str] = pa.Field(alias="o.b")

        class Config:
            unique = ["a", "o"]

    refused(Nested, "Nested", "Config.unique names 'o'", "no scalar field")

    class One(pa.DataFrameModel):
        a: Series[str]

        class Config:
            unique = ["a"]

    refused(One, "One", "Config.unique of one field 'a'", "unique=True")


@pytest.mark.parametrize(("option", "words"), [
    ({"coerce": True}, "coerce=True"),
    ({"ordered": True}, "ordered=True"),
    ({"add_missing_columns": True}, "add_missing_columns=True"),
    ({"drop_invalid_rows": True}, "drop_invalid_rows=True"),
    ({"unique_column_names": True}, "unique_column_names=True"),
    ({"dtype": str}, "dtype="),
])
def test_a_config_option_without_a_meaning_is_refused_by_name(option, words):
    config = type("Config", (), option)
    fields = {"__annotations__": {"a": Series[str]}, "Config": config}
    model = type("Configured", (pa.DataFrameModel,), fields)
    refused(model, "Configured", words, "remove it")


@pytest.mark.parametrize(("field", "words"), [
    (pa.Field(coerce=True), "coerce=True"),
    (pa.Field(default="x"), "default='x'"),
    (pa.Field(regex=True, alias="^a.*$"), "regex=True"),
    (pa.Field(metadata={"item": 1}), "metadata ['item'] has no meaning here"),
    (pa.Field(str_length={"min_value": 1}, ignore_na=False), "ignore_na=False"),
    (pa.Field(str_length={"min_value": 1}, raise_warning=True), "raise_warning=True"),
    (pa.Field(str_length={"min_value": 1}, n_failure_cases=3), "n_failure_cases=3"),
])
def test_a_field_option_without_a_meaning_is_refused_by_name(field, words):
    model = type("Fielded", (pa.DataFrameModel,), {"__annotations__": {"a": Series[str]}, "a": field})
    refused(model, "Fielded", words)


def test_a_path_that_names_no_place_is_refused_with_what_to_write():
    class Dotted(pa.DataFrameModel):
        a: Series[str] = pa.Field(alias="data.app.name]")

    refused(Dotted, "Dotted", "needs quoting")

    class Quoted(pa.DataFrameModel):
        a: Series[str] = pa.Field(alias='data["app.name"]')

    assert read_contract(Quoted).slot('data["app.name"]').path.keys == ("data", "app.name")
