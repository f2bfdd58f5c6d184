"""Shipments: a nested contract that uses what order_events does not, for the nested
differential test (tests/integration/test_differential_nested.py) to hold Spark to pandera on.

Beyond order_events: strict scopes (`Config.strict = True`) at the root and in an element
model, and a `"filter"` one inside that; a declared object that is required and not
nullable (`data`); an object inside an element (`size`); an array inside an element
(`parts`); a nullable optional array; arrays of integers and of decimals; an object path
three keys deep; and a conditional whose two columns are nested paths. No dataset of
pipeline.yaml names it.
"""

import pandera.pandas as pa
from pandera.typing import Series

import foodtaster.checks  # noqa: F401  registers iso_timestamp and conditional

STATUSES = ["NEW", "PAID", "SHIPPED", "LOST"]


class Part(pa.DataFrameModel):
    """One element of `data.parcels[].parts`: an array inside an element; unknown keys dropped."""

    code: Series[str] = pa.Field(isin=["A", "B", "C"])
    grams: Series[int] = pa.Field(gt=0, required=False)

    class Config:
        strict = "filter"


class Parcel(pa.DataFrameModel):
    """One element of `data.parcels`: a strict element, with an object and an array in it."""

    ref: Series[str] = pa.Field(str_matches=r"^P[0-9]{3}$")
    weight: Series[pa.Decimal] = pa.Field(gt=0, dtype_kwargs={"precision": 6, "scale": 3})
    width: Series[float] = pa.Field(alias="size.width", ge=0, le=500)
    unit: Series[str] = pa.Field(alias="size.unit", isin=["cm", "in"], required=False)
    parts: Series[int] = pa.Field(le=3, required=False, nullable=True, metadata={"items": Part})
    packed_on: Series[pa.Date] = pa.Field(nullable=True)

    class Config:
        strict = True


class Score(pa.DataFrameModel):
    """One element of `data.scores`: an integer 0..9, or null."""

    value: Series[int] = pa.Field(in_range={"min_value": 0, "max_value": 9}, nullable=True)


class Fee(pa.DataFrameModel):
    """One element of `data.fees`: a decimal(4,2)."""

    value: Series[pa.Decimal] = pa.Field(le=50, dtype_kwargs={"precision": 4, "scale": 2})


class Shipments(pa.DataFrameModel):
    id: Series[str] = pa.Field(str_matches=r"^s-[0-9]{1,6}$", unique=True)
    urgent: Series[bool] = pa.Field(required=False)
    # Declared, so that a message without it is one reason (`data.required`), not one a field.
    data: Series[object] = pa.Field(metadata={"object": True})
    status: Series[str] = pa.Field(alias="data.status", isin=STATUSES)
    amount: Series[float] = pa.Field(alias="data.amount", ge=0, le=1_000_000, nullable=True)
    carrier: Series[str] = pa.Field(alias="data.carrier.name", str_length={"min_value": 2, "max_value": 20})
    phone: Series[str] = pa.Field(alias="data.carrier.contact.phone", str_startswith="+", nullable=True)
    level: Series[int] = pa.Field(alias="data.carrier.contact.level", le=3, required=False)
    parcels: Series[int] = pa.Field(alias="data.parcels", ge=1, le=4, metadata={"items": Parcel})
    scores: Series[int] = pa.Field(alias="data.scores", required=False, metadata={"items": Score})
    fees: Series[int] = pa.Field(alias="data.fees", le=3, required=False, nullable=True,
                                 metadata={"items": Fee})
    due: Series[pa.Date] = pa.Field(alias="data.due", required=False)

    class Config:
        strict = True
        conditional = {
            "if_column": "data.status",
            "if_in": ["PAID", "SHIPPED"],
            "then_column": "data.amount",
            "then_check": "greater_than",
            "then_value": 0,
        }
