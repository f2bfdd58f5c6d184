"""The submit operator on a real spark-submit (a JVM): a usage error of the job (exit 2) fails the
task at once, any other failure leaves it to Airflow's retries."""

from __future__ import annotations

import os

import pytest

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
