"""The days of orders and customers for second chances: what the generator says holds in its files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from contracts.customers import Customers
from contracts.orders import Orders
from foodtaster_dev.sample import SECOND_CHANCE_OUTCOMES, generate_second_chances

DAYS = ["2026-11-20", "2026-11-21", "2026-11-22"]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_late_customers_and_poisoned_conversations_are_where_the_truth_says(tmp_path: Path) -> None:
    truth = generate_second_chances(tmp_path, DAYS, orders_per_day=40, seed=2)
    assert generate_second_chances(tmp_path / "again", DAYS, orders_per_day=40, seed=2).orders == truth.orders
    customers = {d: _records(tmp_path / "customers" / f"dt={d}" / f"customers-{d}.jsonl") for d in DAYS}
    landed = {c["customer_id"]: d for d in DAYS for c in customers[d]}
    assert {d: len(customers[d]) for d in DAYS} == truth.customers
    by_id = {o.message_id: o for o in truth.orders}
    for day in DAYS:
        orders = _records(tmp_path / "orders" / f"dt={day}" / f"orders-{day}.jsonl")
        of_day = sorted(o.message_id for o in truth.orders if o.day == day)
        assert sorted(o["message_id"] for o in orders) == of_day
        for order in orders:
            expected = by_id[order["message_id"]]
            assert landed.get(order["customer_id"]) == expected.customer_day
            assert (order["currency"] == "XXX") == (expected.expected == "quarantined")
        good = pd.DataFrame([o for o in orders if o["currency"] != "XXX"])
        Orders.validate(good)  # every other message passes the contract on its own
    Customers.validate(pd.DataFrame([c for d in DAYS for c in customers[d]]))
    outcomes = Counter(o.expected for o in truth.orders)
    assert set(outcomes) == set(SECOND_CHANCE_OUTCOMES) and all(outcomes.values())
    # a conversation's messages are in order, and its later ones follow the truth of its first
    for order_id in {o.order_id for o in truth.orders}:
        steps = [o for o in truth.orders if o.order_id == order_id]
        if steps[0].expected == "quarantined":
            assert all(o.expected == "held" for o in steps[1:])
