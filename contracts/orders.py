"""The orders contract: order events from the checkout and fulfilment services.

Types are strict JSON types: `amount` is a JSON number (an integer counts), `items`
a JSON integer (`2.0` does not), strings are JSON strings. Extra fields are allowed.
"""

import pandera.pandas as pa
from pandera.typing import Series

import foodtaster.checks  # noqa: F401  registers iso_timestamp and conditional

CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF"]
STATUSES = ["CREATED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED"]


class Orders(pa.DataFrameModel):
    message_id: Series[str] = pa.Field(str_matches=r"^[A-Za-z0-9_-]{1,64}$", unique=True)
    order_id: Series[str] = pa.Field(str_length={"min_value": 1})
    # Must be a published customer; customers may land a day or two after their first
    # order, so the rule is retried (every 12 h, then 24 h, 48 h) before it is given up on.
    customer_id: Series[str] = pa.Field(str_length={"min_value": 1}, metadata={
        "references": "customers.customer_id",
        "retry": {"max_attempts": 4, "backoff_s": 43200, "backoff_factor": 2},
    })
    amount: Series[float] = pa.Field(ge=0, le=1_000_000)
    currency: Series[str] = pa.Field(isin=CURRENCIES)
    status: Series[str] = pa.Field(isin=STATUSES)
    created_at: Series[str] = pa.Field(iso_timestamp=())
    items: Series[int] = pa.Field(ge=1, le=1000)
    producer: Series[str] = pa.Field(nullable=True, required=False)

    class Config:
        strict = False  # extra fields are allowed and kept in the raw payload
        conditional = {
            "if_column": "status",
            "if_in": ["PAID", "SHIPPED", "DELIVERED"],
            "then_column": "amount",
            "then_check": "greater_than",
            "then_value": 0,
        }
