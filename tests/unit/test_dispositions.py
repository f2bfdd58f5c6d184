"""The dispositions log: a row's status is its latest event's, its history every event naming it;
one event an operation; two writers at once lose nothing, in any fold order."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from foodtaster.state.dispositions import (
    FAILED_AGAIN,
    QUARANTINED,
    REDRIVEN,
    RETRYING,
    DispositionError,
    Dispositions,
    Row,
)
from foodtaster.state.lake import Lake

F1, F2 = "file:/raw/a.jsonl", "file:/raw/b.jsonl"


def test_a_row_no_event_names_is_quarantined(tmp_path):
    state = Dispositions(Lake(str(tmp_path)), "orders").state()
    assert state.status("b1", F1, 3).status == QUARANTINED
    assert state.counts() == {} and state.table().num_rows == 0


def test_one_event_an_operation_with_details_aligned_per_row(tmp_path):
    log = Dispositions(Lake(str(tmp_path)), "orders")
    rows = [Row("b1", F1, 1), Row("b1", F2, 7), Row("b2", F1, 2)]
    log.record(RETRYING, rows, by="job", run="r1", attempts=[1, 2, 1], next_at="2026-11-23T00:00:00+00:00")
    assert len(list((tmp_path / "_state" / "dispositions" / "orders" / "events").iterdir())) == 1
    state = log.state()
    assert state.status("b1", F2, 7).attempts == 2
    assert state.status("b2", F1, 2).next_at == "2026-11-23T00:00:00+00:00"
    assert state.counts("b1") == {RETRYING: 2}
    assert state.table().column("_line_number").to_pylist() == [1, 7, 2]


def test_failing_again_adds_history_but_keeps_the_status(tmp_path):
    log = Dispositions(Lake(str(tmp_path)), "orders")
    log.record(FAILED_AGAIN, [("b1", F1, 4)], by="alice", run="redrive-1", why="redrive",
               reasons=[["amount.greater_than_or_equal_to(0)"]])
    log.record(REDRIVEN, [("b1", F1, 4)], by="bob", run="redrive-2", where="valid/orders/x")
    state = log.state()
    assert state.status("b1", F1, 4).status == REDRIVEN
    assert state.status("b1", F1, 4).where == "valid/orders/x"
    history = log.history("b1", F1, 4)
    assert [(h.what, h.by, h.run) for h in history] == [
        (FAILED_AGAIN, "alice", "redrive-1"), (REDRIVEN, "bob", "redrive-2")]
    assert history[0].reasons == ["amount.greater_than_or_equal_to(0)"]
    assert log.history("b1", F1, 5) == []


def test_a_snapshot_folds_the_same_state(tmp_path):
    log = Dispositions(Lake(str(tmp_path)), "orders")
    log.record(RETRYING, [("b1", F1, 1)], attempts=1)
    log.compact()
    log.record(REDRIVEN, [("b1", F1, 2)], where="w")
    state = log.state()
    assert (state.status("b1", F1, 1).status, state.status("b1", F1, 2).status) == (RETRYING, REDRIVEN)


def test_two_writers_at_once_lose_nothing(tmp_path):
    lake = Lake(str(tmp_path))

    def write(n):
        return Dispositions(lake, "orders").record(RETRYING, [("b1", F1, n)], attempts=1)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(1, 41)))
    assert Dispositions(lake, "orders").state().counts() == {RETRYING: 40}


def test_bad_records_are_refused(tmp_path):
    log = Dispositions(Lake(str(tmp_path)), "orders")
    with pytest.raises(DispositionError, match="must be one of"):
        log.record("lost", [("b1", F1, 1)])
    with pytest.raises(DispositionError, match="2 values for 1 rows"):
        log.record(RETRYING, [("b1", F1, 1)], attempts=[1, 2])
    assert log.record(RETRYING, []) is None


def test_purge_gives_up_on_rows_and_the_cli_shows_their_history(tmp_path, capsys):
    from support.lake import reason, write_batch

    from foodtaster.ops.cli import main
    from foodtaster.state.dispositions import PURGED

    bad = {2: [reason("json.invalid", "not JSON", layer="parse")], 4: [reason("x.y", "no")]}
    write_batch(tmp_path, "2026-11-20", "b1", [b'{"a":1}', b"{bad", b'{"a":3}', b'{"a":4}'], bad)
    lake = ["--dataset", "orders", "--lake", str(tmp_path)]
    assert main(["purge", *lake, "--batch", "b1", "--file", "part-0.jsonl", "--line", "2",
                 "--why", "a test message", "--by", "ann"]) == 0
    assert "purged 1 quarantined rows" in capsys.readouterr().out
    assert main(["purge", *lake, "--batch", "b1", "--why", "the rest too"]) == 0
    assert "purged 1 quarantined rows" in capsys.readouterr().out  # the one left
    state = Dispositions(Lake(str(tmp_path)), "orders").state()
    assert state.counts("b1") == {PURGED: 2}
    (row, _status), *_ = list(state)
    assert main(["history", *lake, "--batch", "b1", "--file", row.source_file, "--line", "2"]) == 0
    out = capsys.readouterr().out
    assert ": purged" in out and "ann" in out and "a test message" in out
    assert main(["purge", *lake, "--batch", "b1", "--line", "2", "--why", "x"]) == 2
