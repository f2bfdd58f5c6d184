"""Which failures are the data's (crash isolation, issue 10): the rule `data_crash` applies."""

from __future__ import annotations

import pytest
from pyspark.errors.exceptions.captured import PythonException

from foodtaster.engine.crash import DataCrash, data_crash


def worker_failure(last_line: str, account: str = "") -> PythonException:
    """A PythonException as a failed task brings it back: the worker's traceback (PySpark's
    captured exceptions need a running JVM: the tests take the `spark` fixture)."""
    desc = ("\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
            "Traceback (most recent call last):\n"
            '  File "/work/contracts/checked.py", line 29, in unlucky\n'
            '    raise ValueError(f"no rule for {value} items")\n'
            f"{last_line}\n{account}")
    return PythonException(desc=desc, stackTrace="org.apache.spark.SparkException: Job aborted")


def test_a_check_that_raises_is_a_data_crash_named_by_its_class_and_first_line(spark):
    crash = data_crash(worker_failure("ValueError: no rule for 13 items"))
    assert crash == DataCrash("ValueError", "no rule for 13 items")
    assert crash.why == "ValueError: no rule for 13 items"
    assert data_crash(worker_failure("pandas.errors.IntCastingNaNError: cannot")).error == \
        "pandas.errors.IntCastingNaNError"
    assert data_crash(worker_failure("ZeroDivisionError")).why == "ZeroDivisionError"
    assert len(data_crash(worker_failure("KeyError: " + "k" * 1000)).why) <= 301


@pytest.mark.parametrize("last_line, account", [
    ("MemoryError", ""),
    ("OSError: [Errno 28] No space left on device", ""),
    ("ConnectionResetError: [Errno 104] Connection reset by peer", ""),
    ("EOFError", ""),
    ("ValueError: x", "ExecutorLostFailure (executor 1 exited caused by one of the running tasks)"),
    ("ValueError: x", "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)"),
])
def test_failures_of_the_machine_are_never_taken_for_the_data(spark, last_line, account):
    assert data_crash(worker_failure(last_line, account)) is None


def test_failures_outside_a_python_check_are_never_taken_for_the_data(spark):
    assert data_crash(FileNotFoundError("lake gone")) is None
    assert data_crash(RuntimeError("Job aborted due to stage failure: java.io.IOException")) is None
    assert data_crash(PythonException(desc="no traceback here", stackTrace="")) is None
