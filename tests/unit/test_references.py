"""Retryable reference checks read from the contract: a reference and its retry policy, or how to
write one."""

from __future__ import annotations

import pandera.pandas as pa
import pytest
from pandera.typing import Series

from contracts.orders import Orders
from foodtaster.contract_references import (
    ContractReferenceError,
    RetryPolicy,
    read_references,
    retryable,
)

RULE = "customer_id.references(customers.customer_id)"


def test_orders_reference_published_customers_and_retry_with_backoff():
    (ref,) = read_references(Orders)
    assert (ref.column, ref.dataset, ref.key, ref.rule) == ("customer_id", "customers", "customer_id", RULE)
    assert ref.retry == RetryPolicy(max_attempts=4, backoff_s=43200, backoff_factor=2)
    assert [ref.retry.wait_s(n) / 3600 for n in range(3)] == [12, 24, 48]
    assert retryable([ref]) == {RULE: ref.retry}


def test_a_badly_written_reference_says_how_to_write_it():
    class Bad(pa.DataFrameModel):
        a: Series[str] = pa.Field(metadata={"references": "customers"})

    class BadRetry(pa.DataFrameModel):
        a: Series[str] = pa.Field(metadata={"references": "c.id", "retry": {"max_attempts": 0,
                                                                            "backoff_s": 1}})

    with pytest.raises(ContractReferenceError, match="<dataset>.<field>"):
        read_references(Bad)
    with pytest.raises(ContractReferenceError, match="max_attempts >= 1"):
        read_references(BadRetry)
