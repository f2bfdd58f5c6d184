"""Contracts the tests point a dataset at, apart from pipeline.yaml's (importable as
`support.contracts:<Class>` with tests/ on the path: pytest puts it there, and the standalone
test hands it to its Airflow processes in PYTHONPATH).

`OrdersNoWait`, for the standalone tests' `orders_chances` dataset
(tests/e2e/test_standalone_backfill.py): the orders contract with no backoff on its reference
check, so every retry pass re-checks a retrying row and the DAG runs of one test a few minutes
apart give a late customer its second chance (contracts/orders.py waits 12 h first).
`OrdersNoWaitFixed`: the same after a contract fix that accepts the sample's poisoned currency,
for a redrive. `OrdersAnyCurrency`: a contract fix for the redrive tests, lowercase and unknown
currency codes accepted.
"""

import pandera.pandas as pa
from pandera.typing import Series

from contracts.orders import CURRENCIES, Orders

NO_WAIT = {"max_attempts": 4, "backoff_s": 0, "backoff_factor": 2}
POISONED_CURRENCY = "XXX"  # foodtaster_dev.sample.generate_second_chances: a poisoned CREATED's


class OrdersNoWait(Orders):
    customer_id: Series[str] = pa.Field(str_length={"min_value": 1}, metadata={
        "references": "customers.customer_id", "retry": NO_WAIT})


class OrdersNoWaitFixed(OrdersNoWait):
    currency: Series[str] = pa.Field(isin=[*CURRENCIES, POISONED_CURRENCY])


class OrdersAnyCurrency(Orders):
    currency: Series[str] = pa.Field(isin=[*CURRENCIES, "usd", "XYZ"])


class Recipient(pa.DataFrameModel):
    """One element of `People.lines`; its `recipient` is personal by the registry's list."""

    recipient: Series[str] = pa.Field(str_length={"min_value": 3, "max_value": 16})
    qty: Series[int] = pa.Field(ge=1)


class People(pa.DataFrameModel):
    """A contract with personal fields (tests/integration/test_personal_masked.py): `name` and
    `contact.email` marked in the contract, `lines[].recipient` by the registry's `personal`."""

    id: Series[str] = pa.Field(str_matches=r"^p-[0-9]+$", unique=True)
    name: Series[str] = pa.Field(str_length={"min_value": 1, "max_value": 60}, metadata={"personal": True})
    email: Series[str] = pa.Field(alias="contact.email", str_matches=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$",
                                  metadata={"personal": True})
    lines: Series[int] = pa.Field(ge=1, le=10, metadata={"items": Recipient})

    class Config:
        strict = False
