"""The customers contract: customer records from the accounts service.

Orders point at them (`orders.customer_id` references `customers.customer_id`); a
customer may be published a day or two after its first order.
"""

import pandera.pandas as pa
from pandera.typing import Series

import foodtaster.checks  # noqa: F401  registers iso_timestamp

TIERS = ["standard", "plus", "business"]


class Customers(pa.DataFrameModel):
    message_id: Series[str] = pa.Field(str_matches=r"^[A-Za-z0-9_-]{1,64}$", unique=True)
    customer_id: Series[str] = pa.Field(str_matches=r"^c-[0-9]{5}$")
    # personal: masked wherever a person reads them
    name: Series[str] = pa.Field(str_length={"min_value": 1, "max_value": 200}, metadata={"personal": True})
    email: Series[str] = pa.Field(str_matches=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", metadata={"personal": True})
    tier: Series[str] = pa.Field(isin=TIERS)
    created_at: Series[str] = pa.Field(iso_timestamp=())

    class Config:
        strict = False
