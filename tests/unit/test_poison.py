"""The poison list: entries added and removed (history kept), concurrent writers, downstream reports,
and finding a message's bytes in a lake by its lineage."""

from __future__ import annotations

import hashlib
import io
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.lake import reason, use_catalog_of, write_batch

from foodtaster.state.browse import NotInLake, landed_lines, message_bytes, quarantined_rows
from foodtaster.state.lake import Lake
from foodtaster.state.poison import PoisonList, PoisonListError, Seen, fingerprint
from foodtaster.state.recall import report_downstream

SHA = hashlib.sha256(b"x").hexdigest()


def test_added_entries_say_what_why_who_when_and_where(tmp_path):
    poison = PoisonList(Lake(str(tmp_path)), "orders")
    seen = Seen("20261120", "file:///raw/part-0.jsonl", 7)
    entry = poison.add("fingerprint", SHA, "  crashes the parser ", "crash", added_by="dag", first_seen=seen)
    assert (entry.match, entry.value, entry.why, entry.source, entry.added_by) == (
        "fingerprint", SHA, "crashes the parser", "crash", "dag")
    assert entry.first_seen == seen and entry.added_at.startswith("20")
    assert PoisonList(Lake(str(tmp_path)), "orders").entries() == [entry]  # read back from the lake
    assert PoisonList(Lake(str(tmp_path)), "payments").entries() == []  # one list a dataset


def test_adding_what_is_already_listed_writes_nothing(tmp_path):
    poison = PoisonList(Lake(str(tmp_path)), "orders")
    first = poison.add("key", "m-13", "test order", "operator")
    again = poison.add("key", "m-13", "other words", "crash")
    assert again == first and len(poison.history()) == 1


def test_removal_is_recorded_and_history_kept(tmp_path):
    poison = PoisonList(Lake(str(tmp_path)), "orders")
    keep = poison.add("key", "a", "bad a", "operator")
    gone = poison.add("key", "b", "bad b", "operator")
    poison.remove(gone.id, "fixed upstream", removed_by="alice")
    assert poison.entries() == [keep]
    history = poison.history()
    assert [e["type"] for e in history] == ["added", "added", "removed"]
    assert history[-1]["id"] == gone.id and history[-1]["by"] == "alice"
    # Listed again after removal: a new entry with a new id.
    again = poison.add("key", "b", "bad b again", "operator")
    assert again.id != gone.id and [e.value for e in poison.entries()] == ["a", "b"]
    with pytest.raises(PoisonListError, match="poison ls"):
        poison.remove(gone.id, "twice")


def test_writers_compact_a_long_tail(tmp_path, monkeypatch):
    monkeypatch.setattr("foodtaster.state.poison.COMPACT_AFTER", 3)
    poison = PoisonList(Lake(str(tmp_path)), "orders")
    for n in range(4):
        poison.add("key", f"k{n}", "bad", "operator")
    folded = poison.log.fold(lambda state, event: state, dict)
    assert folded.snapshot is not None and folded.unsnapshotted == 1
    assert [e.value for e in PoisonList(Lake(str(tmp_path)), "orders").entries()] == ["k0", "k1", "k2", "k3"]


def test_compaction_keeps_the_list(tmp_path):
    poison = PoisonList(Lake(str(tmp_path)), "orders")
    for n in range(5):
        poison.add("key", f"k{n}", "bad", "operator")
    poison.remove(poison.entries()[0].id, "ok after all")
    before = poison.entries()
    assert poison.compact() is not None
    poison.add("key", "k9", "bad", "operator")
    assert [e.value for e in poison.entries()] == [e.value for e in before] + ["k9"]


def test_two_writers_adding_at_the_same_moment_lose_neither_entry(tmp_path):
    lake = Lake(str(tmp_path))
    start = threading.Barrier(2)

    def writer(who):  # a DAG run and an operator, each with its own view of the list
        start.wait()
        return [PoisonList(lake, "orders").add("key", f"{who}-{n}", "bad", "operator", added_by=who)
                for n in range(10)]

    with ThreadPoolExecutor(2) as pool:
        added = [e for batch in pool.map(writer, ["dag_run", "operator"]) for e in batch]
    assert sorted(e.id for e in PoisonList(lake, "orders").entries()) == sorted(e.id for e in added)
    assert len(added) == 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("fingerprint", "abc", "why", "operator"), "64 lowercase hex"),
        (("key", "", "why", "operator"), "unique key's value"),
        (("key", "a", " ", "operator"), "--why"),
        (("key", "a", "why", "cron"), "source"),
        (("id", "a", "why", "operator"), "match"),
    ],
)
def test_bad_entries_are_refused_clearly(tmp_path, args, message):
    with pytest.raises(PoisonListError, match=message):
        PoisonList(Lake(str(tmp_path)), "orders").add(*args)


LINES = [b'{"message_id": "m1"}', b"{'single': 'quotes'}", b'{"message_id": "m3", "tab": "\t"}',
         b'{"message_id": "m4"}']


@pytest.mark.parametrize("file_name", ["part-0.jsonl", "part 0.jsonl.gz"])
def test_a_message_is_found_by_lineage_in_quarantine_or_raw(tmp_path, file_name):
    write_batch(tmp_path, "2026-11-20", "20261120", LINES,
                {2: [reason("json.invalid", "not JSON", layer="parse")]}, file_name=file_name)
    lake = Lake(str(tmp_path))
    raw, seen = message_bytes(lake, "orders", "20261120", file_name, 2)  # from quarantine
    assert raw == LINES[1] and seen.line_number == 2
    assert seen.source_file.endswith(file_name.replace(" ", "%20"))  # the lineage, as Spark wrote it
    raw, seen = message_bytes(lake, "orders", "20261120", file_name, 3)  # a valid row: from raw
    assert raw == LINES[2]
    # Recorded as the row's lineage names its file (Spark's `file:/...`), whichever zone had the bytes.
    assert seen.source_file == message_bytes(lake, "orders", "20261120", file_name, 2)[1].source_file
    with pytest.raises(NotInLake, match="start at 1"):
        message_bytes(lake, "orders", "20261120", file_name, 0)
    with pytest.raises(NotInLake, match="fewer than 9 lines"):
        message_bytes(lake, "orders", "20261120", file_name, 9)
    with pytest.raises(NotInLake, match="give the file's name"):
        message_bytes(lake, "orders", "20261120", "other.jsonl", 1)
    with pytest.raises(NotInLake, match="foodtaster batches"):
        message_bytes(lake, "orders", "nope", file_name, 1)


def test_lines_split_as_spark_reads_them(tmp_path):
    body = b"a\r\nb\rc\n\nd" + b"e" * 3 + b"\r"
    assert list(landed_lines(io.BytesIO(body))) == [b"a", b"b", b"c", b"", b"deee"]


def test_a_downstream_report_lists_the_published_row_by_its_bytes(tmp_path):
    write_batch(tmp_path, "2026-11-20", "20261120", LINES, {})
    lake = Lake(str(tmp_path))
    entry = report_downstream(lake, "orders", batch_id="20261120", source_file="part-0.jsonl",
                              line_number=4, why="billing task crashed: KeyError 'total'",
                              reporter="billing")
    assert (entry.source, entry.match, entry.value) == ("downstream", "fingerprint", fingerprint(LINES[3]))
    assert entry.added_by == "billing" and entry.first_seen.line_number == 4
    by_key = report_downstream(lake, "orders", batch_id="20261120", source_file="part-0.jsonl",
                               line_number=1, why="dup", reporter="billing", key="m1")
    assert (by_key.match, by_key.value) == ("key", "m1")
    assert len(PoisonList(lake, "orders").entries()) == 2


def test_quarantined_rows_filter_by_rule_and_limit(tmp_path):
    write_batch(tmp_path, "2026-11-20", "20261120", LINES, {
        2: [reason("json.invalid", "not JSON", layer="parse")],
        4: [reason("registry.listed", "known", layer="registry"), reason("x.y", "z")],
    })
    lake = Lake(str(tmp_path))
    assert [r["_line_number"] for r in quarantined_rows(lake, "orders", "20261120")] == [2, 4]
    assert [r["_line_number"] for r in quarantined_rows(lake, "orders", "20261120", "x.y")] == [4]
    assert len(quarantined_rows(lake, "orders", "20261120", limit=1)) == 1


def test_a_lake_on_an_object_store_through_fsspec(tmp_path, monkeypatch):
    import fsspec

    write_batch(tmp_path, "2026-11-20", "20261120", LINES, {2: [reason("json.invalid", "not JSON")]})
    memory = fsspec.filesystem("memory")
    memory.put(f"{tmp_path}/", f"/{tmp_path.name}/", recursive=True)
    use_catalog_of(Lake(str(tmp_path)), monkeypatch)  # the tables in a configured catalog
    lake = Lake(f"memory://{tmp_path.name}")
    assert [r["_raw"] for r in quarantined_rows(lake, "orders", "20261120")] == [LINES[1]]
    entry = report_downstream(lake, "orders", batch_id="20261120", source_file="part-0.jsonl",
                              line_number=3, why="crashed", reporter="billing")
    assert PoisonList(lake, "orders").entries() == [entry] and entry.value == fingerprint(LINES[2])
