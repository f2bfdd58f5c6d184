"""Retryable reference checks on Spark: joined on five rows, due by backoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from foodtaster.contract_references import Reference, RetryPolicy
from foodtaster.engine.judging.reference_checks import mark_references, reference_checks, reference_keys
from foodtaster.engine.second_chances.retry import due, only_retryable
from foodtaster.state.lake import Lake

RULE = "customer_id.references(customers.customer_id)"


def test_values_not_among_the_keys_fail_and_nulls_are_not_the_references_business(spark):
    ref = Reference("customer_id", "customers", "customer_id", None)
    keys = spark.createDataFrame([("c-1",), ("c-2",)], "_ref_key string")
    rows = spark.createDataFrame(
        [("m1", "c-1", False), ("m2", "c-9", False), ("m3", None, False), ("m4", "c-9", True)],
        "message_id string, customer_id string, _failed boolean")
    marked = mark_references(rows, [(ref, keys)])
    got = {r["message_id"]: (r["_failed"], r[ref.flag]) for r in marked.collect()}
    assert got == {"m1": (False, False), "m2": (True, True), "m3": (False, False), "m4": (True, True)}
    (reason,) = marked.where("message_id = 'm2'").select(reference_checks([ref])[0].reason).first()[0]
    assert (reason["rule"], reason["value"]) == ("customer_id.references(customers.customer_id)", "c-9")


def test_a_dataset_that_never_published_is_not_checked(spark, tmp_path):
    ref = Reference("customer_id", "customers", "customer_id", None)
    assert reference_keys(spark, Lake(str(tmp_path)), ref) is None


def test_only_rows_failing_only_retryable_rules_are_due_after_their_backoff(spark):
    policy = RetryPolicy(3, 3600, 2)
    landed = datetime(2026, 11, 20, tzinfo=UTC)
    reasons = "array<struct<layer:string,rule:string,column:string,message:string,value:string>>"
    rows = spark.createDataFrame([
        ("k1", [("contract", RULE, "customer_id", "m", "c")], landed),
        ("k2", [("contract", RULE, "customer_id", "m", "c"), ("contract", "amount.x", None, "m", None)],
         landed),
        ("k3", [("contract", RULE, "customer_id", "m", "c")], landed),
        ("k4", [("contract", RULE, "customer_id", "m", "c")], landed),
    ], f"_key string, reasons {reasons}, _ingested_at timestamp")
    tried = landed + timedelta(hours=2)  # as the dispositions log keeps it: the next attempt's time
    next_at = {n: (tried + timedelta(seconds=policy.wait_s(n))).timestamp() for n in (1, 2)}
    attempts = spark.createDataFrame([("k3", 1, next_at[1]), ("k4", 2, next_at[2])],
                                     "_key string, _attempts int, _next_at double")
    retrying = rows.where(only_retryable({RULE: policy}))
    assert sorted(r["_key"] for r in retrying.collect()) == ["k1", "k3", "k4"]  # k2 never retried
    at = {h: sorted(r["_key"] for r in due(retrying, {RULE: policy}, attempts,
                                           landed + timedelta(hours=h)).collect())
          for h in (0.5, 1, 4, 6)}
    # k1: an hour after landing; k3 (1 attempt): 2 h after it; k4 (2 attempts): 4 h after it
    assert at == {0.5: [], 1: ["k1"], 4: ["k1", "k3"], 6: ["k1", "k3", "k4"]}
