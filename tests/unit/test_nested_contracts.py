"""Reading a nested contract (`foodtaster.contract.read_contract`), without Spark: what the
reader refuses, each by a ContractError naming the model and the path, and what it reads.

A contract the reader accepts is one the engine gives pandera's meaning to (the differential
tests hold it to that); anything else must stop the job before it starts, by name, rather
than judge messages with another meaning or fail on the first batch.

No `from __future__ import annotations`: pandera reads a model's annotations, and a model
built in a test names the test's own variables (`Series[dtype]`).
"""

import json
from datetime import date
from decimal import Decimal

import pandera.pandas as pa
import pytest
from pandera.typing import Series

import foodtaster.checks  # noqa: F401  registers iso_timestamp and conditional
import foodtaster_dev.contracts.checked  # noqa: F401  registers the Python check decimal_places
from foodtaster.contract import read_contract
from foodtaster.contract.model import ContractError
from foodtaster.contract.path import Path
from foodtaster.engine.judging.layers import UNEXPECTED, UNKNOWN, column_name, slot_name
from foodtaster.engine.judging.parser_spec import parser_input
from foodtaster.engine.judging.reasons import VALUE_MAX_CHARS


class Line(pa.DataFrameModel):
    sku: Series[str]
    qty: Series[int] = pa.Field(ge=1)


class Tag(pa.DataFrameModel):
    value: Series[str]


def refused(model: type[pa.DataFrameModel], *words: str) -> str:
    """The reader's refusal of `model`: a ContractError whose message holds every one of `words`
    (the model and path first)."""
    with pytest.raises(ContractError) as error:
        read_contract(model)
    message = str(error.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    return message


# ---- what the reader refuses ------------------------------------------------------------------


def test_paths_that_look_alike_name_apart_places_and_columns():
    """`a.b` (the key b of the object a), `a__b` and `["a.b"]` (one key holding a dot) are
    three places: three slots, three Spark columns, three paths in the parser's spec."""

    class Alike(pa.DataFrameModel):
        dotted: Series[str] = pa.Field(alias="a.b")
        underscored: Series[str] = pa.Field(alias="a__b")
        quoted: Series[str] = pa.Field(alias='["a.b"]')

    contract = read_contract(Alike)
    assert [f.path.keys for f in contract.fields] == [("a",), ("a", "b"), ("a__b",), ("a.b",)]
    assert [f.name for f in contract.fields] == ["a", "a.b", "a__b", '["a.b"]']
    assert len({column_name(f.path) for f in contract.fields}) == 4
    spec = json.loads(parser_input(contract, 1000).spec)
    assert [f["path"] for f in spec["fields"]] == [["a"], ["a", "b"], ["a__b"], ["a.b"]]


def test_a_field_under_a_leaf_or_an_array_is_refused():
    class UnderLeaf(pa.DataFrameModel):
        a: Series[str]
        b: Series[str] = pa.Field(alias="a.b")

    refused(UnderLeaf, "UnderLeaf.a.b", "a is a string, not an object")

    class UnderArray(pa.DataFrameModel):
        lines: Series[int] = pa.Field(metadata={"items": Line})
        total: Series[int] = pa.Field(alias="lines.total")

    refused(UnderArray, "UnderArray.lines.total", "lines is a array, not an object")


@pytest.mark.parametrize("path", ["a..b", ".a", "a.", "lines[0].qty", "lines[].qty"])
def test_a_path_is_keys_joined_by_dots(path):
    class Odd(pa.DataFrameModel):
        x: Series[str] = pa.Field(alias=path)

    refused(Odd, f"Odd.{path}")


@pytest.mark.parametrize("dtype", [str, float, bool])
def test_an_array_is_declared_by_its_length_an_int(dtype):
    class Lengthless(pa.DataFrameModel):
        lines: Series[dtype] = pa.Field(alias="data.lines", metadata={"items": Line})  # type: ignore[valid-type]

    refused(Lengthless, "Lengthless.data.lines", "an array is declared as Series[int]")


@pytest.mark.parametrize("items", [{"sku": str}, "Line", Line.to_schema(), object, 3])
def test_an_arrays_items_are_a_dataframe_model(items):
    class Itemless(pa.DataFrameModel):
        lines: Series[int] = pa.Field(alias="data.lines", metadata={"items": items})

    refused(Itemless, "Itemless.data.lines", "metadata 'items' must be a pandera DataFrameModel")


def test_an_object_takes_no_checks():
    class Checked(pa.DataFrameModel):
        data: Series[object] = pa.Field(metadata={"object": True}, nullable=True, str_length={"min_value": 1})
        a: Series[str] = pa.Field(alias="data.a")

    refused(Checked, "Checked.data", "an object takes no checks")


def test_an_element_model_of_one_value_is_a_scalar_not_an_array_or_object():
    class Values(pa.DataFrameModel):
        value: Series[int] = pa.Field(metadata={"items": Tag})

    class Arrays(pa.DataFrameModel):
        matrix: Series[int] = pa.Field(metadata={"items": Values})

    refused(Arrays, "Arrays.matrix[]", "an array of arrays")


def test_an_element_model_takes_no_frame_checks():
    class Conditional(pa.DataFrameModel):
        sku: Series[str]
        qty: Series[int]

        class Config:
            conditional = {"if_column": "sku", "if_in": ["X"], "then_column": "qty",
                           "then_check": "greater_than", "then_value": 0}

    class Holder(pa.DataFrameModel):
        lines: Series[int] = pa.Field(metadata={"items": Conditional})

    refused(Holder, "Holder.lines[]", "an element model takes no frame checks")


def test_a_python_check_runs_only_on_a_scalar_of_the_message_itself():
    class CheckedLine(pa.DataFrameModel):
        price: Series[float] = pa.Field(decimal_places=2)

    class InElement(pa.DataFrameModel):
        lines: Series[int] = pa.Field(alias="data.lines", metadata={"items": CheckedLine})

    refused(InElement, "InElement.data.lines[].price", "the Python check 'decimal_places' runs only on")

    class OnDecimal(pa.DataFrameModel):
        total: Series[pa.Decimal] = pa.Field(alias="data.total", decimal_places=2,
                                             dtype_kwargs={"precision": 10, "scale": 2})

    refused(OnDecimal, "OnDecimal.data.total", "the Python check 'decimal_places' runs only on")

    class OnArray(pa.DataFrameModel):
        lines: Series[int] = pa.Field(decimal_places=2, metadata={"items": Line})

    refused(OnArray, "OnArray.lines", "the Python check 'decimal_places' runs only on")


def test_only_a_scalar_of_the_message_itself_is_unique():
    class UniqueLine(pa.DataFrameModel):
        sku: Series[str] = pa.Field(unique=True)

    class InElement(pa.DataFrameModel):
        lines: Series[int] = pa.Field(alias="data.lines", metadata={"items": UniqueLine})

    refused(InElement, "InElement.data.lines[].sku", "only a field of the message itself can be unique")

    class Parts(pa.DataFrameModel):
        parts: Series[int] = pa.Field(metadata={"items": UniqueLine})

    class Deeper(pa.DataFrameModel):
        lines: Series[int] = pa.Field(metadata={"items": Parts})

    refused(Deeper, "Deeper.lines[].parts[].sku", "only a field of the message itself can be unique")

    class OnArray(pa.DataFrameModel):
        lines: Series[int] = pa.Field(unique=True, metadata={"items": Line})

    refused(OnArray, "OnArray.lines", "only a field of the message itself can be unique")

    class OnObject(pa.DataFrameModel):
        data: Series[object] = pa.Field(unique=True, metadata={"object": True})
        a: Series[str] = pa.Field(alias="data.a")

    refused(OnObject, "OnObject.data", "only a field of the message itself can be unique")


def conditional_model(if_column: str, then_column: str, if_in: list | None = None,
                      **more: object) -> type[pa.DataFrameModel]:
    class Conditional(pa.DataFrameModel):
        status: Series[str] = pa.Field(alias="data.status")
        amount: Series[float] = pa.Field(alias="data.amount")
        due: Series[pa.Date] = pa.Field(alias="data.due")
        total: Series[pa.Decimal] = pa.Field(alias="data.total", dtype_kwargs={"precision": 10, "scale": 2})
        note: Series[str] = pa.Field(alias="data.note")
        paid: Series[bool] = pa.Field(alias="data.paid")
        lines: Series[int] = pa.Field(alias="data.lines", metadata={"items": Line})

        class Config:
            conditional = {"if_column": if_column, "if_in": if_in or ["PAID"], "then_column": then_column,
                           "then_check": "greater_than", "then_value": 0, **more}

    return Conditional


@pytest.mark.parametrize("key, if_column, then_column", [
    ("if_column", "data.lines", "data.amount"),  # an array
    ("if_column", "data", "data.amount"),  # an object
    ("if_column", "data.state", "data.amount"),  # no field
    ("then_column", "data.status", "data.lines"),
    ("then_column", "data.status", "data"),
    ("then_column", "data.status", "data.lines[].qty"),  # an element's field
    ("then_column", "data.status", "qty"),
])
def test_a_conditional_names_a_field_of_the_message(key, if_column, then_column):
    refused(conditional_model(if_column, then_column), "Conditional", f"the conditional's {key}")


@pytest.mark.parametrize("then_column", ["data.note", "data.paid", "data.due", "data.total"])
def test_a_conditional_compares_a_number_field(then_column):
    """pandera's conditional holds only where the value is an int or a float (foodtaster.checks):
    on a string, a boolean, a date or a decimal Spark would compare (or fail to compare, and
    fail the job) where pandera never holds."""
    refused(conditional_model("data.status", then_column), "Conditional", then_column)


@pytest.mark.parametrize("if_column, if_in", [
    ("data.due", ["2026-01-01"]),  # pandas holds a date, never equal to a string; Spark casts
    ("data.status", [1]),  # a string is never the number 1 in pandas; Spark casts "1" to 1
    ("data.amount", ["1"]),
    ("data.paid", ["true"]),
    ("data.total", [0.1]),  # a decimal 0.10 is not the double 0.1 in Python; Spark compares doubles
])
def test_a_conditionals_values_are_of_its_if_columns_type(if_column, if_in):
    refused(conditional_model(if_column, "data.amount", if_in), "Conditional", if_column)


@pytest.mark.parametrize("statistics", [{"then_value": "0"}, {"then_value": True}, {"then_check": "between"}])
def test_a_conditional_compares_with_a_number_by_a_comparison(statistics):
    (key,) = statistics
    refused(conditional_model("data.status", "data.amount", **statistics), "Conditional", key)


def test_a_conditional_on_numbers_and_strings_is_read():
    assert read_contract(conditional_model("data.status", "data.amount")).frame_checks
    assert read_contract(conditional_model("data.amount", "data.amount", [1, 2.5])).frame_checks
    assert read_contract(conditional_model("data.total", "data.amount", [1, Decimal("0.10")])).frame_checks
    assert read_contract(conditional_model("data.due", "data.amount", [date(2026, 1, 1)])).frame_checks
    assert read_contract(conditional_model("data.paid", "data.amount", [True])).frame_checks


def test_a_dtype_without_a_json_type_is_refused_by_path():
    class Timed(pa.DataFrameModel):
        when: Series[pa.DateTime] = pa.Field(alias="data.when")

    refused(Timed, "Timed.data.when", "has no JSON type")

    class Kind(pa.DataFrameModel):
        kind: Series[pa.Category]

    class Holder(pa.DataFrameModel):
        lines: Series[int] = pa.Field(alias="data.lines", metadata={"items": Kind})

    refused(Holder, "Holder.data.lines[].kind", "has no JSON type")


def test_a_decimal_spark_cannot_hold_is_refused():
    class Wide(pa.DataFrameModel):
        total: Series[pa.Decimal] = pa.Field(alias="data.total", dtype_kwargs={"precision": 39, "scale": 2})

    refused(Wide, "Wide.data.total", "decimal(39,2)")

    class Finer(pa.DataFrameModel):
        total: Series[pa.Decimal] = pa.Field(alias="data.total", dtype_kwargs={"precision": 4, "scale": 6})

    # pandera refuses this one itself, before the reader sees a column: it names no field
    refused(Finer, "Finer", "scale 6")


def test_a_declared_object_has_a_field_under_it():
    class Empty(pa.DataFrameModel):
        id: Series[str]
        meta: Series[object] = pa.Field(alias="data.meta", metadata={"object": True})
        a: Series[str] = pa.Field(alias="data.a")

    refused(Empty, "Empty.data.meta", "an object with no field under it")


@pytest.mark.parametrize("value", [1, 0, 1.0, "yes", None])
def test_config_strict_is_true_false_or_filter(value):
    """1 and 0 equal True and False in Python, so `strict in (True, False, "filter")` holds for
    them; the scope would be neither strict nor keeping (`strict is True`, `is False`)."""
    class Root(pa.DataFrameModel):
        id: Series[str]

        class Config:
            strict = value

    class Element(pa.DataFrameModel):
        sku: Series[str]

        class Config:
            strict = value

    class Holder(pa.DataFrameModel):
        lines: Series[int] = pa.Field(metadata={"items": Element})

    refused(Root, "Root", "strict")
    refused(Holder, "Holder.lines[]", "strict")


def test_an_array_is_not_an_object_too():
    """`items` and `object` both: the element rules would be dropped without a word."""
    class Both(pa.DataFrameModel):
        data: Series[int] = pa.Field(metadata={"object": True, "items": Line})
        a: Series[str] = pa.Field(alias="data.a")

    refused(Both, "Both.data", "items")


# ---- what the reader reads --------------------------------------------------------------------


class Part(pa.DataFrameModel):
    code: Series[str]

    class Config:
        strict = False


class Parcel(pa.DataFrameModel):
    weight: Series[float] = pa.Field(alias="size.weight")
    parts: Series[int] = pa.Field(required=False, metadata={"items": Part})

    class Config:
        strict = True


class Shipment(pa.DataFrameModel):
    id: Series[str]
    email: Series[str] = pa.Field(alias="data.customer.contact.email")
    city: Series[str] = pa.Field(alias="data.customer.address.city")
    # declared after the fields under it: it still comes before them
    address: Series[object] = pa.Field(alias="data.customer.address", required=False, nullable=True,
                                       metadata={"object": True})
    parcels: Series[int] = pa.Field(alias="data.parcels", metadata={"items": Parcel})
    tags: Series[int] = pa.Field(alias="data.tags", metadata={"items": Tag})

    class Config:
        strict = "filter"


def test_objects_come_before_the_fields_under_them_implied_or_declared():
    contract = read_contract(Shipment)
    assert [f.name for f in contract.fields] == [
        "id", "data", "data.customer", "data.customer.contact", "data.customer.contact.email",
        "data.customer.address", "data.customer.address.city", "data.parcels", "data.tags",
    ]
    implied = {f.name: f for f in contract.fields if f.is_object and not f.declared}
    assert sorted(implied) == ["data", "data.customer", "data.customer.contact"]
    assert all(f.nullable and not f.required and not f.checks for f in implied.values())
    address = contract.slot("data.customer.address")
    assert address.declared and address.is_object and address.nullable and not address.required
    parcel = contract.slot("data.parcels").items
    assert parcel is not None
    assert [f.name for f in parcel.fields] == ["size", "size.weight", "parts"]


def test_an_element_model_of_one_value_is_read_as_scalar_items():
    tags = read_contract(Shipment).slot("data.tags").items
    assert tags is not None and tags.scalar
    assert [(f.name, f.json_type.name) for f in tags.fields] == [("value", "string")]
    parcels = read_contract(Shipment).slot("data.parcels").items
    assert parcels is not None and not parcels.scalar


def test_strict_is_carried_per_scope():
    contract = read_contract(Shipment)
    parcel = contract.slot("data.parcels").items
    assert parcel is not None
    parts = next(f for f in parcel.fields if f.name == "parts").items
    assert parts is not None
    assert (contract.strict, parcel.strict, parts.strict) == ("filter", True, False)
    assert not contract.keeps_unknown


def test_the_parser_is_asked_for_every_slot_by_path():
    class Item(pa.DataFrameModel):
        n: Series[int]

        class Config:
            strict = True

    class Amount(pa.DataFrameModel):
        value: Series[pa.Decimal] = pa.Field(gt=0.5, dtype_kwargs={"precision": 5, "scale": 1})

    class Small(pa.DataFrameModel):
        id: Series[str]
        when: Series[pa.Date] = pa.Field(alias="d.when")
        items: Series[int] = pa.Field(alias="d.items", metadata={"items": Item})
        amounts: Series[int] = pa.Field(metadata={"items": Amount})

        class Config:
            strict = "filter"

    given = parser_input(read_contract(Small), 1000)
    assert json.loads(given.spec) == {
        "max_bytes": 1000, "value_chars": VALUE_MAX_CHARS, "strict": "filter",
        "fields": [
            {"type": "string", "path": ["id"]},
            {"type": "object", "path": ["d"]},
            {"type": "date", "path": ["d", "when"]},
            {"type": "array", "path": ["d", "items"],
             "items": {"type": "object", "strict": True, "judge": True, "fields": [
                 {"type": "integer", "path": ["n"], "required": True, "nullable": False, "checks": []}]}},
            {"type": "array", "path": ["amounts"], "items": {
                "type": "decimal", "precision": 5, "scale": 1, "judge": True, "nullable": False, "checks": [
                    {"check": "compare", "op": ">", "bound": "0.5", "exact": False}]}},
        ],
    }
    assert [str(slot) for slot in given.slots] == ["id", "d", "d.when", "d.items", "amounts"]
    assert [str(slot) for slot in given.judged] == ["d.items", "amounts"]
    slot_columns = [slot_name(slot, part) for slot in given.slots for part in ("value", "status", "text")]
    judged_columns = [slot_name(slot, part) for slot in given.judged for part in ("passed", "written")]
    assert given.returns.names == ["reasons", *slot_columns, UNEXPECTED, UNKNOWN, *judged_columns]
    element = given.returns[column_name(Path.of("d", "items"))].dataType.elementType  # type: ignore[attr-defined]
    n = column_name(Path.of("n"))
    assert element.names == ["_status", "_text", n, f"{n}__status", f"{n}__text"]
    amount = given.returns[column_name(Path.of("amounts"))].dataType.elementType  # type: ignore[attr-defined]
    assert amount.names == ["_status", "_text", "_value"]


def test_the_parser_judges_an_arrays_elements_only_where_it_means_what_spark_means():
    """An array is judged in the parser (decision 025) when every element rule is one it judges
    as its Spark column does; else its elements keep Spark's `exists`."""

    class Plain(pa.DataFrameModel):
        sku: Series[str] = pa.Field(str_matches="^S", str_length={"min_value": 1}, isin=["S1", "S2"])
        qty: Series[int] = pa.Field(in_range={"min_value": 1, "max_value": 9.5, "include_max": False})

    class Dated(pa.DataFrameModel):
        day: Series[pa.Date]

    class Deep(pa.DataFrameModel):
        n: Series[int] = pa.Field(alias="a.n")

    class Timed(pa.DataFrameModel):
        at: Series[str] = pa.Field(iso_timestamp=())

    class Compared(pa.DataFrameModel):
        code: Series[str] = pa.Field(ge="A")

    class Arrays(pa.DataFrameModel):
        plain: Series[int] = pa.Field(metadata={"items": Plain})
        dated: Series[int] = pa.Field(metadata={"items": Dated})
        deep: Series[int] = pa.Field(metadata={"items": Deep})
        timed: Series[int] = pa.Field(metadata={"items": Timed})
        compared: Series[int] = pa.Field(metadata={"items": Compared})

    given = parser_input(read_contract(Arrays), 1000)
    assert [str(slot) for slot in given.judged] == ["plain"]
    plain = json.loads(given.spec)["fields"][0]["items"]["fields"]
    assert sorted(rule["check"] for rule in plain[0]["checks"]) == ["in", "length", "regex"]
    assert plain[1]["checks"] == [
        {"check": "compare", "op": ">=", "bound": "1", "exact": True},
        {"check": "compare", "op": "<", "bound": "9.5", "exact": False}]
