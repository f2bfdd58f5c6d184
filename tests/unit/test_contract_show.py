"""`foodtaster contract show`: the effective contract, one row a slot at every depth, whichever
front-end read it (`foodtaster.contract.describe`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandera.pandas as pa
from pandera.typing import Series

from foodtaster.contract import read_contract
from foodtaster.contract.describe import ContractRow, describe
from foodtaster.registry import get_dataset

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args: str, expect: int = 0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PROJECT_ROOT}
    done = subprocess.run([sys.executable, "-m", "foodtaster", *args], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == expect, done.stderr
    return done


class Part(pa.DataFrameModel):
    n: Series[int] = pa.Field(gt=0)

    class Config:
        strict = True


class Widget(pa.DataFrameModel):
    id: Series[str] = pa.Field(unique=True)
    email: Series[str] = pa.Field(alias='owner["e.mail"]', metadata={"personal": True}, nullable=True)
    parts: Series[int] = pa.Field(alias="build.parts", le=5, required=False, metadata={"items": Part})
    size: Series[str] = pa.Field(isin=["S", "M", "L", "XL", "XXL", "3XL", "4XL"])


def by_path(rows: list[ContractRow]) -> dict[str, ContractRow]:
    return {row.path: row for row in rows}


def test_every_slot_of_a_nested_contract_with_its_full_pattern():
    rows = by_path(describe(get_dataset("order_events").read_contract()))
    assert list(rows)[:5] == ["id", "source", "specversion", "type", "time"]
    assert rows["id"] == ContractRow("id", "string", True, False, ("str_matches(^[A-Za-z0-9_-]{1,64}$)",),
                                     key=True, personal=False)
    assert rows["time"].type == "timestamp" and rows["time"].checks == ()
    assert rows["data"].type == "object (implied)"
    assert rows["data.customer.address"] == ContractRow("data.customer.address", "object", False, True, (),
                                                        False, True)  # personal: masked where shown
    assert rows["data.lines"].checks == ("greater_than_or_equal_to(1)", "less_than_or_equal_to(100)")
    assert rows["data.lines[].qty"].checks == ("greater_than_or_equal_to(1)", "less_than_or_equal_to(1000)")
    assert rows["data.lines[].price"].type == "decimal(10,2)"
    assert rows["data.tags[]"] == ContractRow("data.tags[]", "string", True, False,
                                              ("str_length(min_value=1,max_value=32)",), False, False)
    assert rows["data.delivery_date"].nullable and rows["data.delivery_date"].type == "date"


def test_keys_personal_values_quoted_paths_and_strict_elements():
    rows = by_path(describe(read_contract(Widget)))
    assert rows["id"].key and not rows["size"].key
    assert rows['owner["e.mail"]'].personal and rows['owner["e.mail"]'].nullable
    assert rows["owner"].type == "object (implied)"
    assert rows["build.parts"].checks == ("less_than_or_equal_to(5)", "items.strict")
    assert not rows["build.parts"].required
    assert rows["build.parts[].n"].checks == ("greater_than(0)",)
    assert rows["size"].checks == ("isin(S,M,L,XL,XXL,3XL,…)",)


def test_a_json_schema_contract_shows_its_typed_view_and_the_keywords_of_each_place():
    rows = {r.path: r for r in describe(get_dataset("payment_events").read_contract())}
    assert rows["id"] == ContractRow("id", "string", True, False, ("pattern(^evt_[A-Za-z0-9]{16,32}$)",),
                                     False, False)
    assert rows["created"].type == "any (JSON text)" and rows["created"].checks == ("oneOf",)
    assert rows["data.object.amount"].type == "integer" and "minimum(1)" in rows["data.object.amount"].checks
    closed = rows["data.object.billing_details.address"]
    assert closed.checks == ("additionalProperties(false): closed",)
    assert rows["data.object.receipt_email"].checks == ("format(email)",)  # asserted: no "(annotation)"


def test_show_prints_an_aligned_table_with_one_line_a_check():
    out = run("contract", "show", "order_events").stdout.splitlines()
    assert out[0] == "order_events: contracts.order_events:OrderEvents; unknown fields kept in _unknown"
    assert out[1].split() == ["path", "type", "required", "nullable", "checks", "key", "personal"]
    start = out[1].index("checks")
    qty = next(i for i, line in enumerate(out) if line.startswith("data.lines[].qty "))
    assert out[qty][start:].strip() == "greater_than_or_equal_to(1)"
    assert out[qty + 1].strip() == "less_than_or_equal_to(1000)" and out[qty + 1][start] == "l"
    assert next(line for line in out if line.startswith("id ")).rstrip().endswith("yes")


def test_show_json_and_across_fields():
    rows = [json.loads(line) for line in run("contract", "show", "orders", "--json").stdout.splitlines()]
    assert rows[0] == {"path": "message_id", "type": "string", "required": True, "nullable": False,
                       "checks": ["str_matches(^[A-Za-z0-9_-]{1,64}$)"], "key": True, "personal": False}
    text = run("contract", "show", "orders").stdout
    assert "across fields: amount.greater_than(0).when(status in (PAID,SHIPPED,DELIVERED))" in text


def test_show_an_unknown_dataset_is_a_usage_error():
    done = run("contract", "show", "nope", expect=2)
    assert "dataset 'nope' is not in the registry" in done.stderr
