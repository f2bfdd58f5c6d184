"""The e2e scenario chains (tests/support/chains.py): a failure stops its chain, and the scenarios
after it say which one failed instead of failing on the state it left."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from support.chains import NotRun, run_chain


def test_a_failed_scenario_stops_its_chain_and_keeps_its_own_error():
    ran = []

    def first():
        ran.append("first")

    def second():
        ran.append("second")
        raise ValueError("the real cause")

    def third():
        ran.append("third")
        raise AssertionError("a symptom of the broken state")

    outcomes = [Future() for _ in range(4)]
    run_chain(list(zip(["first", "second", "third", "fourth"], [first, second, third, third],
                       outcomes, strict=True)))

    assert ran == ["first", "second"]
    assert outcomes[0].result() is None
    with pytest.raises(ValueError, match="the real cause"):
        outcomes[1].result()
    for later in outcomes[2:]:
        with pytest.raises(NotRun, match=r"^not run: second failed$"):
            later.result()


def test_a_chain_without_failure_runs_every_scenario():
    ran = []
    outcomes = [Future(), Future()]
    run_chain([(name, lambda name=name: ran.append(name), outcome)
               for name, outcome in zip(["a", "b"], outcomes, strict=True)])
    assert ran == ["a", "b"] and [o.result() for o in outcomes] == [None, None]
