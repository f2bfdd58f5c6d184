"""The append-only state log: writers never lose each other's events; snapshots fold the same."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from foodtaster.state.events import EventLog, new_name
from foodtaster.state.lake import Lake


def count_fold(state, event):
    return {**state, event["who"]: state.get(event["who"], 0) + event["n"]}


def empty():
    return {}


def test_a_new_log_folds_to_its_initial_state(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    folded = log.fold(count_fold, empty)
    assert (folded.state, folded.snapshot, folded.events) == ({}, None, ())
    assert log.compact(count_fold, empty) is None  # nothing to snapshot


def test_events_are_kept_one_object_each_in_order(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    names = [log.append({"who": "a", "n": n}) for n in (1, 2, 3)]
    assert names == sorted(names) and len(set(names)) == 3
    files = sorted((tmp_path / "_state" / "counters" / "orders" / "events").iterdir())
    assert [f.name for f in files] == [f"{n}.json" for n in names]
    assert [e["n"] for e in log.events()] == [1, 2, 3]
    assert log.fold(count_fold, empty).state == {"a": 6}


def test_names_are_unique_even_in_the_same_microsecond():
    from datetime import UTC, datetime

    moment = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)
    names = {new_name(moment) for _ in range(1000)}
    assert len(names) == 1000 and all(n.startswith("20261122T150000.000000Z-") for n in names)


def test_two_threads_writing_at_the_same_moment_lose_nothing(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    start = threading.Barrier(8)

    def writer(who: str) -> None:
        start.wait()  # every writer released at once
        for _ in range(25):
            log.append({"who": who, "n": 1})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(writer, [f"w{i}" for i in range(8)]))
    assert log.fold(count_fold, empty).state == {f"w{i}": 25 for i in range(8)}


def _process_writer(root: str, who: str, start) -> None:
    start.wait()
    log = EventLog(Lake(root), "counters", "orders")
    for _ in range(20):
        log.append({"who": who, "n": 1})


def test_two_processes_writing_at_the_same_moment_lose_nothing(tmp_path):
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    writers = [context.Process(target=_process_writer, args=(str(tmp_path), who, start))
               for who in ("dag_run", "operator")]
    for w in writers:
        w.start()
    for w in writers:
        w.join(60)
    assert [w.exitcode for w in writers] == [0, 0]
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    assert log.fold(count_fold, empty).state == {"dag_run": 20, "operator": 20}


def test_compaction_then_later_events_fold_the_same(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    for n in range(5):
        log.append({"who": "a", "n": n})
    snapshot = log.compact(count_fold, empty)
    assert snapshot is not None
    assert log.compact(count_fold, empty) is None  # nothing new since
    log.append({"who": "b", "n": 7})
    folded = log.fold(count_fold, empty)
    assert folded.snapshot == snapshot and folded.unsnapshotted == 1
    assert folded.state == {"a": 10, "b": 7}
    assert len(folded.events) == 6 and len(log.events()) == 6  # history is kept


def test_a_reader_trusts_the_snapshot_and_folds_only_what_it_does_not_cover(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    log.append({"who": "a", "n": 1})
    log.compact(count_fold, empty)
    # An event covered by the snapshot is not folded twice, even if a fold would count it.
    assert log.fold(count_fold, empty).state == {"a": 1}
    # A late writer's event named before the snapshot is still folded in: covers, not time.
    from datetime import UTC, datetime

    late = new_name(datetime(2000, 1, 1, tzinfo=UTC))
    (tmp_path / "_state/counters/orders/events" / f"{late}.json").write_text(
        f'{{"event": "{late}", "who": "late", "n": 4}}')
    assert log.fold(count_fold, empty).state == {"a": 1, "late": 4}


def test_unfinished_writes_are_not_events(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    log.append({"who": "a", "n": 1})
    (tmp_path / "_state/counters/orders/events/x.json.tmp").write_text("{half")
    assert log.fold(count_fold, empty).state == {"a": 1}


def test_an_object_store_through_fsspec(tmp_path):
    log = EventLog(Lake(f"memory://{tmp_path.name}/lake"), "counters", "orders")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda who: log.append({"who": who, "n": 2}), ["a", "b", "c", "d"]))
    log.compact(count_fold, empty)
    log.append({"who": "a", "n": 1})
    assert log.fold(count_fold, empty).state == {"a": 3, "b": 2, "c": 2, "d": 2}


@pytest.mark.parametrize("kind", ["", "../x", "a/b"])
def test_a_kind_must_be_one_folder_name(tmp_path, kind):
    with pytest.raises(ValueError):
        EventLog(Lake(str(tmp_path)), kind, "orders")


def test_the_log_names_each_event_whatever_the_caller_passes(tmp_path):
    log = EventLog(Lake(str(tmp_path)), "counters", "orders")
    name = log.append({"who": "a", "n": 1, "event": "forged"})
    assert [e["event"] for e in log.events()] == [name]
