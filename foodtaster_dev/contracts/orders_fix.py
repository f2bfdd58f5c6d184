"""The orders contract after a fix, as `make demo` and the redrive tests apply it.

The checkout started sending lowercase ISO currency codes (`usd`); they mean the same
currency, so the contract accepts them. Point `orders.contract` in pipeline.yaml here
(the demo writes its own copy of the registry) and redrive the quarantined rows.
"""

import pandera.pandas as pa
from pandera.typing import Series

from contracts.orders import CURRENCIES, Orders


class OrdersCurrencyFix(Orders):
    currency: Series[str] = pa.Field(isin=[*CURRENCIES, *(code.lower() for code in CURRENCIES)])
