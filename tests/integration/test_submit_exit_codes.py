"""The submit operator on a real spark-submit (a JVM): a usage error of the job (exit 2) fails the
task at once, any other failure leaves it to Airflow's retries."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from foodtaster.errors import REFUSED_EXIT_CODE
from foodtaster.state.lake import Lake
from foodtaster.state.refusals import alert_stem, refusals
from foodtaster_airflow import ledger_step
from foodtaster_airflow.spark_submit import ValidateBatchOperator
from foodtaster_dev.localenv import VENV_BIN


@pytest.mark.parametrize(("exit_code", "retried"), [(2, False), (1, True)])
def test_a_usage_error_fails_at_once_and_other_failures_are_retried(
    tmp_path, monkeypatch, exit_code, retried
):
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    monkeypatch.setenv("PATH", f"{VENV_BIN}:{os.environ['PATH']}")
    app = tmp_path / "app.py"
    app.write_text(f"import sys\nsys.exit({exit_code})\n")
    operator = ValidateBatchOperator(task_id="validate", application=str(app), dataset="orders",
                                     conf={"spark.ui.enabled": "false"})
    with pytest.raises(AirflowException) as raised:
        operator.execute({})
    assert isinstance(raised.value, AirflowFailException) is not retried


def test_a_refused_validation_is_noted_alerted_and_failed_at_once_with_the_reason_last(
    tmp_path, monkeypatch, caplog
):
    """The job's `REFUSED: ...` line becomes the run's note, an alert, and the task's last log
    line; the task fails without retries."""
    import logging

    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    monkeypatch.setenv("PATH", f"{VENV_BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("FOODTASTER_LAKE", str(tmp_path / "lake"))
    why = "orders batch 20261121: 2 of its quarantined rows were redriven. Redrive them instead"
    app = tmp_path / "app.py"
    app.write_text(f"import sys\nprint('REFUSED: {why}', file=sys.stderr)\nsys.exit({REFUSED_EXIT_CODE})\n")
    notes = []
    monkeypatch.setattr(ledger_step, "note_run", lambda *args: notes.append(args))
    landed = {"batch_id": "20261121", "batch_date": "2026-11-21"}  # the land task's XCom, rendered
    operator = ValidateBatchOperator(task_id="validate", application=str(app), dataset="orders",
                                     conf={"spark.ui.enabled": "false"}, landed=landed)
    ti = SimpleNamespace(dag_id="foodtaster_orders")
    caplog.set_level(logging.INFO)
    with pytest.raises(AirflowFailException, match=f"^REFUSED: {why}$"):
        operator.execute({"ti": ti, "run_id": "manual__1"})
    assert notes == [("orders", "20261121", "foodtaster_orders", "manual__1",
                      f"REFUSED: batch 20261121, inbox date 2026-11-21: {why}")]
    (refused,) = refusals(Lake(str(tmp_path / "lake")), "orders")
    assert (refused.batch_id, refused.batch_date, refused.run_id) == ("20261121", "2026-11-21", "manual__1")
    page = (tmp_path / f"lake/_state/alerts/orders/{alert_stem('manual__1')}.html").read_text()
    assert not (tmp_path / "lake/_state/alerts/orders/20261121-refused.html").exists()
    assert "REFUSED by the validate task" in page and why in page and "without retries" in page
    assert "/dags/foodtaster_orders/runs/manual__1" in page
    assert caplog.records[-1].getMessage() == f"REFUSED: {why}"
