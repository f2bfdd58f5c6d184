"""The redrive's options: the CLI and the DAG's rendered arguments parse the same way, the DAG's
form is checked before Spark starts, and the report reads by rule."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from foodtaster.errors import UsageError
from foodtaster.ops.redrive import RedrivePlan, add_arguments, describe, selection_words
from foodtaster_airflow.redrive_steps import plan_redrive, triggering_user


def _parse(argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_empty_options_mean_not_given():
    args = _parse(["--dataset", "orders", "--from", "2026-11-21", "--to", "2026-11-21", "--rule", "",
                   "--message-id", "", "--why", "", "--by", "x"])
    assert (args.rule, args.batch, args.message_id, args.dry_run) == (None, None, None, False)
    assert _parse(["--dataset", "o", "--from", "2026-11-21", "--to", "2026-11-22", "--dry-run"]).dry_run


def test_bad_dates_and_batches_are_usage_errors():
    with pytest.raises(SystemExit) as stopped:
        _parse(["--dataset", "o", "--from", "2026-13-01", "--to", "2026-11-21"])
    assert stopped.value.code == 2
    with pytest.raises(SystemExit):
        _parse(["--dataset", "o", "--from", "2026-11-01", "--to", "2026-11-21", "--batch", "../x"])


def test_a_plan_is_the_jobs_command_line_and_crosses_tasks_as_json(monkeypatch, tmp_path):
    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path))
    form = {"date_from": "2026-11-21", "dry_run": False, "rule": "currency.isin", "batch_id": "20261121",
            "message_id": "m-1", "why": "contract fix"}
    plan = plan_redrive("orders", form, "manual__2026-11-27T03:54:01", by="alice")
    assert RedrivePlan.from_json(plan.to_json()) == plan
    args = _parse(plan.arguments())
    assert (args.dataset, args.date_from, args.date_to, args.rule, args.batch, args.message_id) == (
        "orders", "2026-11-21", "2026-11-21", "currency.isin", "20261121", "m-1")
    assert (args.dry_run, args.why, args.by, args.lake) == (False, "contract fix", "alice", str(tmp_path))
    assert args.redrive_id == plan.redrive_id
    dry = _parse(plan_redrive("orders", {"date_from": "2026-11-21"}, "r").arguments())
    assert dry.dry_run and (dry.rule, dry.batch, dry.message_id) == (None, None, None)  # dry by default
    with pytest.raises(ValueError, match="nothing to redrive"):
        plan_redrive("orders", {"release_batch": "20261121", "why": "w"}, "r").arguments()


def test_the_form_is_checked_before_spark_starts(monkeypatch, tmp_path):
    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path))
    plan = plan_redrive("orders", {"date_from": "2026-11-21", "dry_run": False, "rule": ""}, "manual__x")
    assert plan.date_to == "2026-11-21" and plan.rule is None
    assert plan.redrive and not plan.release
    assert plan_redrive("orders", {"release_batch": "20261121", "why": "checked"}, "r").redrive is False
    with pytest.raises(UsageError, match="From batch date"):
        plan_redrive("orders", {}, "r")
    with pytest.raises(UsageError, match="needs Why"):
        plan_redrive("orders", {"release_batch": "20261121"}, "r")
    with pytest.raises(UsageError, match="after To"):
        plan_redrive("orders", {"date_from": "2026-11-22", "date_to": "2026-11-21"}, "r")
    with pytest.raises(UsageError, match=r'From batch date "yesterday" is not a date'):
        plan_redrive("orders", {"date_from": "yesterday"}, "r")
    with pytest.raises(UsageError, match=r'is not a batch id') as raised:
        plan_redrive("orders", {"release_batch": "x" * 20_000, "why": "w"}, "r")
    assert len(str(raised.value)) < 200  # a huge value is quoted back short


def test_a_release_names_the_person_who_triggered_it(monkeypatch, tmp_path):
    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path))
    run = SimpleNamespace(triggering_user_name="alice")
    by = triggering_user({"dag_run": run, "run_id": "manual__2026-11-27T03:54:01"})
    assert by == "alice"
    planned = plan_redrive("orders", {"release_batch": "20261121", "why": "ok"}, "manual__x", by=by)
    assert planned.by == "alice"
    assert triggering_user({"dag_run": SimpleNamespace(triggering_user_name="dag_test")}).endswith(
        " (airflow dags test)")


def test_the_report_reads_by_rule_and_batch():
    counts = {"published": 2, "duplicate": 1, "quarantined": 5}
    text = describe({"dry_run": True, "counts": counts, "redrive_id": "r1", "dataset": "orders",
                     "selection": {"date_from": "2026-11-21", "date_to": "2026-11-21"},
                     "by_rule": {"currency.isin": {**counts, "quarantined": 0}},
                     "by_batch": {"20261121": {"batch_date": "2026-11-21", **counts}}})
    assert text.startswith("DRY RUN, nothing moved") and "2 would be published" in text
    assert "currency.isin" in text and "batch 20261121 (2026-11-21): 2 published, 1 duplicate" in text
    assert "redrive r1 of orders 2026-11-21: 2 would be" in text  # one day once, no None


def test_a_selection_says_only_the_narrowings_it_has():
    words = selection_words({"date_from": "2026-11-20", "date_to": "2026-11-21", "rule": None,
                             "batch_id": "20261121", "message_id": None})
    assert words == "2026-11-20..2026-11-21, batch 20261121"
