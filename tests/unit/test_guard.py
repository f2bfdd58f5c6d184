"""The guard a Python check runs in (issue 39): every way a check's process can end becomes an
exception that says how, and a check that answers is answered as if unguarded."""

from __future__ import annotations

import os
import signal
import sys
import time

import pandas as pd
import pytest

from foodtaster.engine.judging.guard import Budget, CheckDied, CheckOutOfMemory, CheckTimedOut, guarded

QUICK = Budget(timeout_s=60, memory_mb=128)


def test_an_answer_comes_back_as_it_was_given():
    verdicts = guarded(lambda tick: pd.Series([True, False, pd.NA], dtype="boolean"), QUICK, "check")
    assert verdicts.tolist() == [True, False, pd.NA]
    assert guarded(lambda tick: {"big": b"x" * (4 << 20)}, QUICK, "check")["big"] == b"x" * (4 << 20)


def test_a_check_that_raises_is_raised_again_as_it_is():
    def raises(tick):
        raise ValueError("no rule for 13 items")

    with pytest.raises(ValueError, match="no rule for 13 items"):
        guarded(raises, QUICK, "check")


class Unpicklable(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")

    def __reduce__(self):
        raise TypeError("not today")


def test_an_exception_that_cannot_cross_is_sent_by_its_words():
    def raises(tick):
        raise Unpicklable(1, 2)

    with pytest.raises(RuntimeError, match=r"test_guard\.Unpicklable: 1/2"):
        guarded(raises, QUICK, "check")


@pytest.mark.parametrize("end, why", [
    (lambda: os._exit(3), "worker died: exit 3"),
    (lambda: os.kill(os.getpid(), signal.SIGSEGV), "worker died: signal 11 (SIGSEGV)"),
    (lambda: os.kill(os.getpid(), signal.SIGKILL), "worker died: signal 9 (SIGKILL)"),
    (lambda: os.abort(), "worker died: signal 6 (SIGABRT)"),
    (lambda: sys.exit(), "worker died: exit 0 (sys.exit)"),
    (lambda: sys.exit(2), "worker died: exit 2 (sys.exit)"),
    (lambda: sys.exit("fatal error"), "worker died: exit 1 (sys.exit)"),
])
def test_a_process_that_dies_says_how(end, why):
    with pytest.raises(CheckDied) as died:
        guarded(lambda tick: end(), QUICK, "check")
    assert str(died.value) == why


def test_memory_past_the_budget_is_out_of_memory_and_the_worker_keeps_its_own():
    def eat(tick):
        blocks = []
        while True:
            blocks.append(bytearray(32 << 20))

    with pytest.raises(CheckOutOfMemory, match=r"^killed: out of memory \(check asked for more than 128 MB"):
        guarded(eat, Budget(timeout_s=60, memory_mb=128), "check")
    assert len(bytearray(256 << 20)) == 256 << 20  # the limit was the child's alone


def test_a_check_past_its_budget_is_killed_and_a_tick_gives_each_message_its_own():
    started = time.monotonic()
    with pytest.raises(CheckTimedOut, match=r"^timeout: check x ran past 2 s on one message$"):
        guarded(lambda tick: time.sleep(600), Budget(timeout_s=2), "check x")
    assert time.monotonic() - started < 60

    def slow_messages(tick):  # three messages of 1 s: 3 s in all, each within its budget
        for _ in range(3):
            tick()
            time.sleep(1)
        return "judged"

    assert guarded(slow_messages, Budget(timeout_s=2), "check") == "judged"
