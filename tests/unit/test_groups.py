"""Conversation quarantine: the groups log's fold, and the registry's group_by and order_by."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.lake import poison

from foodtaster.registry import Conversation, RegistryError, load_registry
from foodtaster.state.groups import GroupLog, group_name, group_text
from foodtaster.state.lake import Lake


def test_a_group_is_open_until_each_poison_message_is_released(tmp_path):
    log = GroupLog(Lake(str(tmp_path)), "orders")
    assert log.poisoned("b1", [poison("1", "o-1"), poison("2", "o-1"), poison("3", "o-2")]) == 3
    assert sorted(log.open_groups()) == ["o-1", "o-2"]
    assert log.release(["1", "3", "unknown"], "redriven", "test") == ["1", "3"]
    assert list(log.open_groups()) == ["o-1"]  # its second poison still holds it
    assert log.release_group("o-1", "operator", "test") == ["2"]
    assert log.open_groups() == {}


def test_a_rerun_records_the_same_poison_without_reopening(tmp_path):
    log = GroupLog(Lake(str(tmp_path)), "orders")
    log.poisoned("b1", [poison("1", "o-1")])
    log.release(["1"], "retried", "test")
    log.poisoned("b1", [poison("1", "o-1")])  # the batch rerun: same lineage, still released
    assert log.open_groups() == {}
    log.poisoned("b2", [poison("9", "o-1", batch="b2")])  # a new poison reopens the group
    assert [p.lineage for p in log.open_groups()["o-1"]] == ["9"]


def test_a_rerun_of_the_job_writes_only_poison_that_is_not_open_already(tmp_path):
    """The job's record of a batch's poison (`Extras.record`): a rerun that quarantines the same
    messages appends nothing, one that no longer quarantines a message releases it."""
    from foodtaster.engine.second_chances.second_chances import Extras
    from foodtaster.registry import get_dataset

    lake, config = Lake(str(tmp_path)), get_dataset("orders")

    def record(poison_now):
        extras = Extras(config, [], opened=GroupLog(lake, "orders").open_poison())
        extras.poison = poison_now
        return extras.record(lake, "b1")

    assert record([poison("1", "o-1"), poison("2", "o-2")]) == 2
    assert record([poison("1", "o-1"), poison("2", "o-2")]) == 2
    assert [e["type"] for e in GroupLog(lake, "orders").log.events()] == ["poisoned"]
    assert record([poison("2", "o-2"), poison("3", "o-3")]) == 2
    events = GroupLog(lake, "orders").log.events()
    assert [(e["type"], len(e.get("poison", e.get("lineages")))) for e in events] == [
        ("poisoned", 2), ("poisoned", 1), ("released", 1)]
    assert sorted(GroupLog(lake, "orders").open_groups()) == ["o-2", "o-3"]


def test_group_by_needs_order_by(tmp_path):
    registry = tmp_path / "pipeline.yaml"
    registry.write_text(
        "datasets:\n  orders:\n    contract: contracts.orders:Orders\n"
        "    expectation_suite: expectations/orders.json\n    group_by: order_id\n"
    )
    with pytest.raises(RegistryError, match="group_by and order_by go together"):
        load_registry(registry)


def test_orders_are_conversations_of_an_order():
    config = load_registry()["orders"]
    assert (config.group_by, config.order_by) == ("order_id", "created_at")


def _registry(tmp_path, group_by: str) -> Path:
    registry = tmp_path / "pipeline.yaml"
    registry.write_text(
        "datasets:\n  shipments:\n    contract: contracts/shipments.odcs.yaml:shipments\n"
        f"    expectation_suite: expectations/orders.json\n    group_by: {group_by}\n"
        "    order_by: scanned_at\n")
    return registry


def test_a_conversation_of_several_fields_is_a_list_and_one_listed_field_is_that_field(tmp_path):
    config = load_registry(_registry(tmp_path, "[carrier, tracking_no]"))["shipments"]
    assert config.conversation == Conversation(("carrier", "tracking_no"), "scanned_at")
    one = load_registry(_registry(tmp_path, "[carrier]"))["shipments"]
    assert (one.group_by, one.conversation) == ("carrier", Conversation(("carrier",), "scanned_at"))
    for wrong in ("[carrier, carrier]", "[]", "[carrier, 3]", "{a: b}"):
        with pytest.raises(RegistryError, match="group_by is a field's path or a list"):
            load_registry(_registry(tmp_path, wrong))


def test_a_group_is_spelled_as_the_job_spells_it():
    assert group_text(["o-1"]) == "o-1"  # one field: its text, as before
    assert group_text([7]) == "7" and group_text([True]) == "true"
    assert group_text(["DHL", "1Z99"]) == '["DHL","1Z99"]'
    assert group_text(["Zoë", 'a"b']) == '["Zoë","a\\"b"]'
    assert group_text(["DHL", None]) is None and group_text([None]) is None
    assert group_name(("order_id",)) == "order_id"
    assert group_name(("carrier", "tracking_no")) == "(carrier,tracking_no)"
