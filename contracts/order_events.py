"""The order_events contract: order events in a CloudEvents 1.0 envelope, the order under `data`.

A nested contract is a pandera model of the message *flattened by path*
(docs/judging.md, "Nested messages"):

- a field inside objects is named by its dotted path (`alias="data.customer.email"`);
- an array is an integer column holding the array's length, with
  `metadata={"items": <element model>}`: `ge`/`le` bound its length, and the element
  model judges every element (an array of scalars: an element model of one field, `value`);
- an object may be declared (`Series[object]`, `metadata={"object": True}`) to say
  whether it is required or nullable; when an optional object is absent or null, the
  fields under it are not judged;
- `pa.Decimal` (with `dtype_kwargs={"precision": p, "scale": s}`) is a JSON number that
  fits exactly, `pa.Date` a `YYYY-MM-DD` string naming a real date.
"""

import pandera.pandas as pa
from pandera.typing import Series

import foodtaster.checks  # noqa: F401  registers iso_timestamp and conditional

EVENT_TYPES = ["com.shop.order.created", "com.shop.order.paid", "com.shop.order.shipped"]
COUNTRIES = ["US", "DE", "FR", "GB", "JP", "CH"]


class OrderLine(pa.DataFrameModel):
    """One element of `data.lines`."""

    sku: Series[str] = pa.Field(str_matches=r"^SKU-[0-9]{5}$")
    qty: Series[int] = pa.Field(ge=1, le=1000)
    price: Series[pa.Decimal] = pa.Field(ge=0, dtype_kwargs={"precision": 10, "scale": 2})

    class Config:
        strict = False


class Tag(pa.DataFrameModel):
    """One element of `data.tags`: an array of strings."""

    value: Series[str] = pa.Field(str_length={"min_value": 1, "max_value": 32})


class OrderEvents(pa.DataFrameModel):
    # The CloudEvents envelope: `id` is the message's identity (a redelivery repeats it).
    id: Series[str] = pa.Field(str_matches=r"^[A-Za-z0-9_-]{1,64}$", unique=True)
    source: Series[str] = pa.Field(str_startswith="/shop/")
    specversion: Series[str] = pa.Field(isin=["1.0"])
    type: Series[str] = pa.Field(isin=EVENT_TYPES)
    time: Series[str] = pa.Field(iso_timestamp=())
    # The payload.
    order_id: Series[str] = pa.Field(alias="data.order_id", str_length={"min_value": 1})
    customer_id: Series[str] = pa.Field(alias="data.customer.id", str_matches=r"^c-[0-9]{5}$")
    # The customer's email and address are personal: masked wherever a person reads them.
    customer_email: Series[str] = pa.Field(
        alias="data.customer.email", str_matches=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$",
        metadata={"personal": True},
    )
    # The shipping address may be left out or null; when it is there, it is whole.
    address: Series[object] = pa.Field(
        alias="data.customer.address", required=False, nullable=True,
        metadata={"object": True, "personal": True},
    )
    street: Series[str] = pa.Field(alias="data.customer.address.street", str_length={"min_value": 1})
    zip: Series[str] = pa.Field(alias="data.customer.address.zip", str_matches=r"^[0-9A-Z -]{3,10}$")
    country: Series[str] = pa.Field(alias="data.customer.address.country", isin=COUNTRIES)
    lines: Series[int] = pa.Field(alias="data.lines", ge=1, le=100, metadata={"items": OrderLine})
    tags: Series[int] = pa.Field(alias="data.tags", le=10, required=False, metadata={"items": Tag})
    total: Series[pa.Decimal] = pa.Field(
        alias="data.total", ge=0, dtype_kwargs={"precision": 12, "scale": 2}
    )
    delivery_date: Series[pa.Date] = pa.Field(alias="data.delivery_date", nullable=True)

    class Config:
        strict = False  # fields the contract does not name are kept (valid/ `_unknown`)
