"""A contract fix for the redrive tests: lowercase and unknown currency codes accepted."""

import pandera.pandas as pa
from pandera.typing import Series

from contracts.orders import CURRENCIES, Orders


class OrdersAnyCurrency(Orders):
    currency: Series[str] = pa.Field(isin=[*CURRENCIES, "usd", "XYZ"])
