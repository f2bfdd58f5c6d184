"""The order_events contract after a fix, for the nested redrive tests and demos.

The warehouse started sending order lines with `qty` 0 for an item that is out of stock and
kept on the order; they are real lines, so the element model accepts 0. Point
`order_events.contract` here and redrive the quarantined rows: a message quarantined for
`data.lines[].qty.greater_than_or_equal_to(1)` alone is published.
"""

import pandera.pandas as pa
from pandera.typing import Series

from contracts.order_events import OrderEvents, OrderLine


class OrderLineZeroQty(OrderLine):
    qty: Series[int] = pa.Field(ge=0, le=1000)


class OrderEventsZeroQty(OrderEvents):
    lines: Series[int] = pa.Field(alias="data.lines", ge=1, le=100, metadata={"items": OrderLineZeroQty})
