"""The poison list in the job: a listed message is quarantined unjudged with its entry's why,
counted apart, pages nobody; removing the entry makes it judged again on the next rerun."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import functions as F
from support.frames import batch_frame

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.policy import Facts, decide
from foodtaster.registry import get_dataset
from foodtaster.state.lake import Lake
from foodtaster.state.poison import PoisonList, fingerprint
from foodtaster_dev.sample import generate_batch


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    inbox = tmp_path_factory.mktemp("inbox")
    generate_batch(inbox, messages=200, seed=3, poison_rate=0.1, files=1, gzip_files=0,
                   max_message_bytes=4096)
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    config = dataclasses.replace(get_dataset("orders"), max_message_bytes=4096)
    return BatchRun(config=config, input_path=str(inbox), lake=lake, batch_id="b1",
                    batch_date="2026-11-20", gate=False)


def _rows(spark, run, zone):
    return batch_frame(spark, run.lake, "orders", zone, run.batch_id)


def test_listed_messages_are_quarantined_unjudged_and_counted_apart(spark, setting):
    first = run_batch(spark, setting).to_json()
    assert first["listed"] == 0
    quarantined = _rows(spark, setting, "quarantine").orderBy("_line_number").first()
    valid = _rows(spark, setting, "valid").orderBy("_line_number").first()
    poison = PoisonList(setting.lake, "orders")
    by_bytes = poison.add("fingerprint", fingerprint(bytes(quarantined._raw)), "crashes the billing job",
                          "downstream")
    by_key = poison.add("key", valid.message_id, "a known test order", "operator")

    second = run_batch(spark, setting).to_json()

    rows = {r._line_number: r for r in _rows(spark, setting, "quarantine").collect()}
    for line, entry in ((quarantined._line_number, by_bytes), (valid._line_number, by_key)):
        reasons = rows[line].reasons
        assert [(r.layer, r.rule, r.message, r.value) for r in reasons] == [
            ("registry", "registry.listed", entry.why, entry.id)]
    assert second["listed"] == 2
    assert second["quarantined"] == first["quarantined"] + 1  # the valid one moved over
    assert second["valid"] == first["valid"] - 1
    assert second["messages"] == second["valid"] + second["quarantined"] + second["duplicates_dropped"]
    assert _rows(spark, setting, "valid").where(F.col("message_id") == valid.message_id).count() == 0
    # Known messages page nobody: the thresholds see the new quarantined messages only.
    new_rate = (second["quarantined"] - 2) / second["messages"]
    assert any("2 of" in why for why in decide(Facts.of_summary(second), setting.config).why)
    assert abs(new_rate - (first["quarantined"] - 1) / first["messages"]) < 1e-9

    poison.remove(by_key.id, "was a real order after all")
    third = run_batch(spark, setting).to_json()
    assert third["listed"] == 1
    assert _rows(spark, setting, "valid").where(F.col("message_id") == valid.message_id).count() == 1
