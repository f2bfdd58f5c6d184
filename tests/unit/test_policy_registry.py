"""The gate policy's thresholds and the registry's checks on pipeline.yaml."""

import pytest

from foodtaster.policy import Facts, decide
from foodtaster.registry import RegistryError, get_dataset, load_registry

ORDERS = get_dataset("orders")  # alert_rate 0.02, hold_rate 0.20


def summary(rate, messages=100, gate_passed=True):
    failed = [] if gate_passed else [{"expectation": "expect_column_median_to_be_between"}]
    return {"quarantine_rate": rate, "messages": messages, "gate": {"passed": gate_passed, "failed": failed}}


@pytest.mark.parametrize(
    ("rate", "gate", "publish", "alert", "severity"),
    [
        (0.0, True, True, False, "ok"),
        (0.0199, True, True, False, "ok"),
        (0.02, True, True, True, "warning"),  # at alert_rate: alert
        (0.1999, True, True, True, "warning"),
        (0.20, True, False, True, "critical"),  # at hold_rate: hold
        (0.0, False, False, True, "critical"),  # a failed batch gate holds
    ],
)
def test_thresholds_are_inclusive(rate, gate, publish, alert, severity):
    verdict = decide(Facts.of_summary(summary(rate, gate_passed=gate)), ORDERS)
    assert (verdict.publish, verdict.alert, verdict.severity) == (publish, alert, severity)
    assert bool(verdict.why) == alert


def test_an_empty_batch_is_neither_published_nor_alerted():
    verdict = decide(Facts.of_summary(summary(0.0, messages=0, gate_passed=False)), ORDERS)
    assert (verdict.publish, verdict.alert) == (False, False)


def test_registry_reads_defaults_and_overrides():
    assert ORDERS.max_message_bytes == 1048576 and ORDERS.disable_after == 5
    assert ORDERS.max_crash_isolations == 10  # pipeline.yaml's default
    assert ORDERS.python_check_timeout_s == 10 and ORDERS.python_check_memory_mb == 2048
    assert ORDERS.alerts.smtp_conn_id == "smtp_default" and ORDERS.alerts.email_to
    assert ORDERS.load_contract().__name__ == "Orders" and ORDERS.suite_path().is_file()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("datasets: {Orders: {contract: a:b, expectation_suite: x}}", "must match"),
        ("datasets: {o: {contract: a:b}}", "expectation_suite"),
        ("datasets: {o: {contract: a:b, expectation_suite: x, alert_rate: 0.5, hold_rate: 0.1}}",
         "alert_rate"),
        ("datasets: {o: {contract: a:b, expectation_suite: x, colour: red}}", "unknown keys"),
        ("datasets: {o: {contract: a:b, expectation_suite: x, max_crash_isolations: -1}}",
         "max_crash_isolations must be an integer >= 0"),
        ("datasets: {o: {contract: a:b, expectation_suite: x, python_check_timeout_s: 0}}",
         "python_check_timeout_s must be seconds"),
        ("datasets: {o: {contract: a:b, expectation_suite: x, python_check_timeout_s: ten}}",
         "python_check_timeout_s must be seconds"),
        ("datasets: {o: {contract: a:b, expectation_suite: x, python_check_memory_mb: 1.5}}",
         "python_check_memory_mb must be an integer"),
    ],
)
def test_registry_rejects_bad_entries_clearly(tmp_path, body, message):
    path = tmp_path / "pipeline.yaml"
    path.write_text(body)
    with pytest.raises(RegistryError, match=message):
        load_registry(path)


def test_unknown_dataset_and_unimportable_contract():
    with pytest.raises(RegistryError, match="not in the registry"):
        get_dataset("nope")
    broken = ORDERS.__class__(name="x", contract="contracts.missing:X", expectation_suite="x")
    with pytest.raises(RegistryError, match="cannot be imported"):
        broken.load_contract()


def listed_summary(messages, quarantined, listed, gate_passed=True):
    return {**summary(round(quarantined / messages, 6), messages, gate_passed),
            "quarantined": quarantined, "listed": listed}


@pytest.mark.parametrize(
    ("quarantined", "listed", "publish", "alert", "severity"),
    [
        (30, 30, True, False, "ok"),  # 30% quarantined, all known: nobody paged again
        (30, 28, True, True, "warning"),  # 2 new in 100: at alert_rate
        (30, 29, True, False, "ok"),  # 1 new: below alert_rate
        (30, 10, False, True, "critical"),  # 20 new: at hold_rate
        (1, 0, True, False, "ok"),
    ],
)
def test_thresholds_apply_to_new_quarantined_messages(quarantined, listed, publish, alert, severity):
    verdict = decide(Facts.of_summary(listed_summary(100, quarantined, listed)), ORDERS)
    assert (verdict.publish, verdict.alert, verdict.severity) == (publish, alert, severity)
    if listed:
        assert f"{listed} of {quarantined} quarantined messages were already listed" in verdict.why
        assert any(w.startswith("new quarantine rate") for w in verdict.why) == alert
    else:
        assert verdict.why == ()


def test_a_batch_made_only_of_listed_messages_is_not_held():
    # Its valid partition is empty, so a volume expectation fails: nothing new to gate.
    verdict = decide(Facts.of_summary(listed_summary(40, 40, 40, gate_passed=False)), ORDERS)
    assert (verdict.publish, verdict.alert) == (True, False)
    assert verdict.why == ("all 40 of 40 quarantined messages were already listed",)


def test_a_failed_gate_still_holds_a_batch_with_some_listed_messages():
    verdict = decide(Facts.of_summary(listed_summary(100, 5, 4, gate_passed=False)), ORDERS)
    assert (verdict.publish, verdict.severity) == (False, "critical")
    assert verdict.why[-1] == "4 of 5 quarantined messages were already listed"


@pytest.mark.parametrize(("retrying", "held", "publish", "severity"), [
    (29, 0, True, "ok"),  # 30 quarantined, 29 wait for a late customer: 1 new in 100
    (0, 25, True, "warning"),  # 25 held behind their conversation's poison: 5 new, over alert_rate
    (5, 5, False, "critical"),  # 20 new: at hold_rate
])
def test_retrying_and_held_for_their_group_are_not_new_poison(retrying, held, publish, severity):
    batch = {**listed_summary(100, 30, 0), "retrying": retrying, "held_for_group": held}
    verdict = decide(Facts.of_summary(batch), ORDERS)
    assert (verdict.publish, verdict.severity) == (publish, severity)
    assert f"{retrying + held} of 30 quarantined messages wait (a retry, their conversation)" in verdict.why


def test_the_alert_says_how_many_quarantined_messages_were_already_listed():
    from foodtaster.ops.alerts import build_batch_alert

    batch = {**listed_summary(100, 30, 27), "dataset": "orders", "batch_id": "20261121",
             "batch_date": "2026-11-21", "valid": 70}
    alert = build_batch_alert(batch, decide(Facts.of_summary(batch), ORDERS), ORDERS, {})
    assert "Already listed:     27 of the quarantined (poison list)" in alert.text
    assert "27 of 30 quarantined messages were already listed" in alert.text


def test_counts_that_do_not_add_up_hold_the_batch():
    facts = Facts(messages=100, quarantine_rate=0.01, quarantined=1, accounted=96)
    verdict = decide(facts, ORDERS)
    assert not verdict.publish and verdict.severity == "critical"
    assert "do not add up" in verdict.why[-1]
