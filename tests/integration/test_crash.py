"""Which failures are the data's (crash isolation, issue 10): the rule `data_crash` applies."""

from __future__ import annotations

import json

import pytest
from pyspark.errors.exceptions.captured import PythonException

from foodtaster.engine.batch.crash import DataCrash, NotIsolated, data_crash, isolate
from foodtaster.privacy import Masker


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


def lines(spark, count: int, files=("file:/b/a.jsonl", "file:/b/b.jsonl")):
    return spark.createDataFrame(
        [(bytearray(f"{f}:{n}".encode()), f, n) for f in files for n in range(1, count + 1)],
        "_raw binary, _source_file string, _line_number long")


def crashing_on(wanted: set[tuple[str, int]], together: bool = False):
    """A judge that crashes where the rows hold a wanted line (or, `together`, all of them)."""
    steps = []

    def judge(rows) -> None:
        seen = {(r._source_file, r._line_number) for r in rows.collect()}
        steps.append(len(seen))
        if (wanted <= seen) if together else (wanted & seen):
            raise worker_failure("ValueError: no rule for 13 items")

    judge.steps = steps
    return judge


def test_isolation_halves_a_crashing_file_down_to_each_crashing_line(spark):
    wanted = {("file:/b/a.jsonl", 7), ("file:/b/a.jsonl", 50), ("file:/b/b.jsonl", 64)}
    judge, logged = crashing_on(wanted), []
    found = isolate(lines(spark, 64), judge, 10, lambda event, **fields: logged.append((event, fields)))
    assert {(i.source_file, i.line_number) for i in found} == wanted
    assert {bytes(i.raw) for i in found} == {f"{f}:{n}".encode() for f, n in wanted}
    assert {i.crash.why for i in found} == {"ValueError: no rule for 13 items"}
    assert max(judge.steps) == 64 and len(judge.steps) < 3 * 2 * 7  # a file at most, then halves
    assert sum(event == "crash_isolated" for event, _ in logged) == 3
    assert all("file" in fields for _, fields in logged)


def test_a_crash_keeps_no_personal_value_of_its_message_in_its_why(spark):
    email = "ann.smith@example.com"
    rows = spark.createDataFrame(
        [(bytearray(json.dumps({"id": n, "email": email if n == 3 else "bo@example.org"}).encode()),
          "file:/b/a.jsonl", n) for n in range(1, 9)], "_raw binary, _source_file string, _line_number long")

    def judge(frame) -> None:  # a check whose exception quotes the value it choked on
        if any(b"ann.smith" in r._raw for r in frame.collect()):
            raise worker_failure(f"ValueError: no route for {email} in message 3")

    logged = []
    masker = Masker.of(["email"], b"k" * 32)
    found = isolate(rows, judge, 10, lambda event, **fields: logged.append(fields), masker)
    assert [(i.line_number, i.crash.why) for i in found] == [
        (3, f"ValueError: no route for {masker.mask(email)} in message 3")]
    assert email in bytes(found[0].raw).decode()  # the quarantine keeps the exact bytes
    assert not any(email in str(fields) for fields in logged)


def test_isolation_stops_at_its_bound_and_refuses_a_crash_no_one_line_makes(spark):
    wanted = {("file:/b/a.jsonl", n) for n in (3, 9, 27)}
    assert len(isolate(lines(spark, 32), crashing_on(wanted), 2, lambda *a, **k: None)) == 2
    together = crashing_on({("file:/b/a.jsonl", 3), ("file:/b/a.jsonl", 30)}, together=True)
    with pytest.raises(NotIsolated, match="a.jsonl: .* several messages at once"):
        isolate(lines(spark, 32), together, 10, lambda *a, **k: None)


def guard_ending(error: str, why: str) -> PythonException:
    """What a task failed by the guard brings back (issue 39): the ending's class and words."""
    return worker_failure(f"foodtaster.engine.judging.guard.{error}: {why}")


@pytest.mark.parametrize("error, why", [
    ("CheckDied", "worker died: signal 11 (SIGSEGV)"),
    ("CheckDied", "worker died: exit 1"),
    ("CheckDied", "worker died: exit 0 (sys.exit)"),
    ("CheckTimedOut", "timeout: check items.hostile(True) ran past 10 s on one message"),
    ("CheckOutOfMemory", "killed: out of memory (check items.x asked for more than 2048 MB)"),
])
def test_a_check_whose_process_ended_is_a_data_crash_whose_why_says_how(spark, error, why):
    crash = data_crash(guard_ending(error, why))
    assert crash.ended and crash.why == why


def test_a_death_is_confirmed_alone_twice_and_one_that_does_not_come_again_is_not_isolated(spark):
    wanted = ("file:/b/a.jsonl", 5)
    deaths = []

    def dies(times: int):
        def judge(rows) -> None:
            if wanted in {(r._source_file, r._line_number) for r in rows.collect()} and len(deaths) < times:
                deaths.append(rows.count())
                raise guard_ending("CheckDied", "worker died: signal 9 (SIGKILL)")
        return judge

    found = isolate(lines(spark, 8, files=("file:/b/a.jsonl",)), dies(100), 10, lambda *a, **k: None)
    assert [(i.line_number, i.crash.why) for i in found] == [(5, "worker died: signal 9 (SIGKILL)")]
    assert deaths[-2:] == [1, 1]  # alone twice
    deaths.clear()  # dies three times (the file, lines 5-6, line 5 alone), then passes
    with pytest.raises(NotIsolated, match=r"a.jsonl line 5: .* ended alone once .* passed the second time"):
        isolate(lines(spark, 8, files=("file:/b/a.jsonl",)), dies(3), 10, lambda *a, **k: None)
