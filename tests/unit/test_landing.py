"""Landing: the raw copy and manifest of a batch, the bookmark, reruns, unreadable files."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import fsspec
import pytest

from foodtaster.sources import inbox, lines
from foodtaster.sources.inbox import LandingError, land_batch
from foodtaster.sources.raw_batch import batch_id_for
from foodtaster.state.lake import BATCH_ID_PATTERN, Lake

DATE = "2026-11-20"
FIRST = datetime(2026, 11, 21, 1, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(str(tmp_path / "lake"))


def put(lake: Lake, name: str, data: bytes, date: str = DATE, hour: int | None = None) -> Path:
    path = Path(lake.inbox("orders", date, hour)) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def manifest_bytes(lake: Lake, batch_id: str, date: str = DATE) -> bytes:
    return (Path(lake.raw("orders", date, batch_id)) / "_manifest.json").read_bytes()


def raw_tree(lake: Lake, batch_id: str, date: str = DATE) -> dict[str, bytes]:
    root = Path(lake.raw("orders", date, batch_id))
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_batch_id_is_the_interval() -> None:
    assert batch_id_for(DATE) == "20261120"
    assert batch_id_for(DATE, 13) == "2026112013"
    assert batch_id_for(DATE, 0) == "2026112000"
    assert BATCH_ID_PATTERN.match(batch_id_for(DATE, 7))
    with pytest.raises(ValueError):
        batch_id_for(DATE, 24)
    with pytest.raises(ValueError):
        batch_id_for("20261120")


def test_landing_copies_files_and_the_manifest_describes_them(lake: Lake) -> None:
    files = {
        "a.jsonl": b'{"id": 1}\n{"id": 2}\n',  # trailing newline adds no line
        "b.jsonl": b'{"id": 3}\r\n{"id": 4}\r\n{"id": 5}',  # CRLF, last line unterminated
        "c.jsonl": b'{"id": 6}\r{"id": 7}\r',  # bare CR
        "d.jsonl": b"\n\n",  # two empty lines are two lines
        "e.jsonl": b"",  # an empty file has none
        "f.jsonl.gz": gzip.compress(b'{"id": 8}\n{"id": 9}\n{"id": 10}'),  # counted decompressed
    }
    for name, data in files.items():
        put(lake, name, data)
    put(lake, "_SUCCESS", b"")
    put(lake, ".g.jsonl.tmp", b'{"id": 11}\n')  # a producer's file still being written

    result = land_batch(lake, "orders", DATE, now=FIRST)

    assert (result.batch_id, result.batch_date, result.empty) == ("20261120", DATE, False)
    assert result.raw_path == lake.raw("orders", DATE, "20261120")
    expected_lines = {"a.jsonl": 2, "b.jsonl": 3, "c.jsonl": 2, "d.jsonl": 2, "e.jsonl": 0,
                      "f.jsonl.gz": 3}
    assert {f["name"]: f["lines"] for f in result.files} == expected_lines
    assert result.messages == 12
    assert result.unreadable == []
    assert raw_tree(lake, "20261120") == {**files, "_manifest.json": manifest_bytes(
        lake, "20261120")}

    manifest = json.loads(manifest_bytes(lake, "20261120"))
    assert manifest["dataset"] == "orders"
    assert manifest["batch_id"] == "20261120"
    assert manifest["batch_date"] == DATE
    assert manifest["landed_at"] == "2026-11-21T01:00:00+00:00"
    assert manifest["hour"] is None and manifest["inbox"] == f"inbox/orders/dt={DATE}"
    assert manifest["files"] == result.files
    for entry in manifest["files"]:
        data = files[entry["name"]]
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["source"] == f"inbox/orders/dt={DATE}/{entry['name']}"
    assert result.as_dict()["files"] == manifest["files"]


def test_crlf_split_across_read_chunks_is_one_line_end(lake: Lake) -> None:
    data = b"x" * (lines.CHUNK_BYTES - 1) + b"\r\n" + b"y\r\n"
    put(lake, "big.jsonl", data)
    put(lake, "big.jsonl.gz", gzip.compress(data))
    result = land_batch(lake, "orders", DATE)
    assert {f["name"]: f["lines"] for f in result.files} == {"big.jsonl": 2, "big.jsonl.gz": 2}


def test_concatenated_gzip_members_are_one_file(lake: Lake) -> None:
    put(lake, "multi.jsonl.gz", gzip.compress(b"1\n2\n") + gzip.compress(b"3\n"))
    result = land_batch(lake, "orders", DATE)
    assert result.files[0]["lines"] == 3 and result.unreadable == []


def test_rerun_of_the_same_interval_is_identical(lake: Lake) -> None:
    put(lake, "a.jsonl", b"1\n2\n")
    put(lake, "b.jsonl.gz", gzip.compress(b"3\n"))
    first = land_batch(lake, "orders", DATE, now=FIRST)
    manifest, tree = manifest_bytes(lake, "20261120"), raw_tree(lake, "20261120")

    again = land_batch(lake, "orders", DATE, now=LATER)

    assert again == first
    assert manifest_bytes(lake, "20261120") == manifest
    assert raw_tree(lake, "20261120") == tree
    assert sorted(p.name for p in Path(lake.root, "raw", "orders").rglob("batch_id=*")) == [
        "batch_id=20261120"
    ]


def test_a_new_file_on_a_rerun_joins_the_same_batch(lake: Lake) -> None:
    put(lake, "a.jsonl", b"1\n2\n")
    land_batch(lake, "orders", DATE, now=FIRST)
    put(lake, "b.jsonl", b"3\n")

    result = land_batch(lake, "orders", DATE, now=LATER)

    assert [f["name"] for f in result.files] == ["a.jsonl", "b.jsonl"]
    assert result.messages == 3
    manifest = json.loads(manifest_bytes(lake, "20261120"))
    assert manifest["landed_at"] == "2026-11-21T01:00:00+00:00"  # the first landing's
    assert set(raw_tree(lake, "20261120")) == {"a.jsonl", "b.jsonl", "_manifest.json"}


def test_a_file_landed_in_one_batch_is_not_landed_into_another(lake: Lake) -> None:
    put(lake, "a.jsonl", b"1\n")
    land_batch(lake, "orders", DATE)

    other = land_batch(lake, "orders", DATE, batch_id="20261120-manual")
    assert other.empty and other.files == [] and other.messages == 0

    put(lake, "b.jsonl", b"2\n")
    other = land_batch(lake, "orders", DATE, batch_id="20261120-manual")
    assert [f["name"] for f in other.files] == ["b.jsonl"]
    # the first batch, rerun, still holds only its own file
    assert [f["name"] for f in land_batch(lake, "orders", DATE).files] == ["a.jsonl"]


def test_a_rewritten_inbox_file_lands_as_a_new_file_beside_the_old_one(lake: Lake) -> None:
    put(lake, "a.jsonl.gz", gzip.compress(b"1\n"))
    land_batch(lake, "orders", DATE)
    new_bytes = gzip.compress(b"1\n2\n")
    put(lake, "a.jsonl.gz", new_bytes)

    result = land_batch(lake, "orders", DATE)

    sha = hashlib.sha256(new_bytes).hexdigest()
    assert [f["name"] for f in result.files] == [f"a-{sha[:12]}.jsonl.gz", "a.jsonl.gz"]
    assert raw_tree(lake, "20261120")[f"a-{sha[:12]}.jsonl.gz"] == new_bytes
    assert result.messages == 3


def test_a_rerun_rebuilds_from_the_raw_copy_when_the_inbox_was_cleaned(lake: Lake) -> None:
    inbox_file = put(lake, "a.jsonl", b"1\n")
    land_batch(lake, "orders", DATE, now=FIRST)
    manifest = manifest_bytes(lake, "20261120")
    inbox_file.unlink()
    raw = Path(lake.raw("orders", DATE, "20261120"))
    (raw / ".b.jsonl.landing").write_bytes(b"half a copy")  # left by a crashed landing

    result = land_batch(lake, "orders", DATE, now=LATER)

    assert [f["name"] for f in result.files] == ["a.jsonl"]
    assert manifest_bytes(lake, "20261120") == manifest
    assert set(raw_tree(lake, "20261120")) == {"a.jsonl", "_manifest.json"}


def test_a_landed_file_lost_everywhere_is_an_error(lake: Lake) -> None:
    inbox_file = put(lake, "a.jsonl", b"1\n")
    land_batch(lake, "orders", DATE)
    inbox_file.unlink()
    (Path(lake.raw("orders", DATE, "20261120")) / "a.jsonl").unlink()
    with pytest.raises(LandingError, match="a.jsonl"):
        land_batch(lake, "orders", DATE)


def test_unreadable_gzip_is_quarantined_whole_and_the_rest_lands(lake: Lake) -> None:
    good = gzip.compress(b"1\n2\n")
    corrupt = b"\x1f\x8b\x08\x00" + b"definitely not deflate" * 10
    truncated = gzip.compress(b"".join(b'{"id": %d}\n' % i for i in range(2000)))[:-40]
    not_gzip = b'{"id": 1}\n'
    put(lake, "good.jsonl.gz", good)
    put(lake, "corrupt.jsonl.gz", corrupt)
    put(lake, "truncated.jsonl.gz", truncated)
    put(lake, "plain-named.jsonl.gz", not_gzip)

    result = land_batch(lake, "orders", DATE)

    assert [f["name"] for f in result.files] == ["good.jsonl.gz"]
    assert result.messages == 2 and not result.empty
    reasons = {u["name"]: u["reason"] for u in result.unreadable}
    assert set(reasons) == {"corrupt.jsonl.gz", "truncated.jsonl.gz", "plain-named.jsonl.gz"}
    assert reasons["corrupt.jsonl.gz"].startswith("corrupt gzip: ")
    assert reasons["plain-named.jsonl.gz"].startswith("corrupt gzip: ")
    assert reasons["truncated.jsonl.gz"].startswith("truncated gzip: ")
    tree = raw_tree(lake, "20261120")
    assert tree["_unreadable/corrupt.jsonl.gz"] == corrupt
    assert tree["_unreadable/truncated.jsonl.gz"] == truncated
    assert tree["good.jsonl.gz"] == good
    manifest = json.loads(manifest_bytes(lake, "20261120"))
    assert manifest["unreadable"] == result.unreadable
    entry = next(u for u in manifest["unreadable"] if u["name"] == "corrupt.jsonl.gz")
    assert entry["bytes"] == len(corrupt)
    assert entry["sha256"] == hashlib.sha256(corrupt).hexdigest()
    assert "lines" not in entry

    # an unreadable file is taken too: another batch does not quarantine it again
    assert land_batch(lake, "orders", DATE, batch_id="other").empty


def test_an_empty_inbox_records_an_empty_batch(lake: Lake) -> None:
    result = land_batch(lake, "orders", DATE, now=FIRST)  # no inbox folder at all
    assert result.empty and result.messages == 0 and result.files == []
    manifest = json.loads(manifest_bytes(lake, "20261120"))
    assert manifest["files"] == [] and manifest["unreadable"] == []

    put(lake, "_SUCCESS", b"")
    assert land_batch(lake, "orders", DATE, now=LATER).empty


def test_hourly_interval_lands_only_its_hour(lake: Lake) -> None:
    put(lake, "a.jsonl", b"1\n", hour=13)
    put(lake, "b.jsonl", b"2\n3\n", hour=14)

    result = land_batch(lake, "orders", DATE, hour=13)

    assert result.batch_id == "2026112013"
    assert result.raw_path == lake.raw("orders", DATE, "2026112013")
    assert [f["source"] for f in result.files] == [f"inbox/orders/dt={DATE}/hour=13/a.jsonl"]
    assert json.loads(manifest_bytes(lake, "2026112013"))["hour"] == 13
    assert land_batch(lake, "orders", DATE, hour=14).messages == 2


def test_a_rerun_from_the_wrong_interval_or_a_lost_bookmark_is_refused(lake: Lake) -> None:
    put(lake, "a.jsonl", b"1\n", hour=13)
    land_batch(lake, "orders", DATE, hour=13)
    tree = raw_tree(lake, "2026112013")

    with pytest.raises(LandingError, match="hour=13"):
        land_batch(lake, "orders", DATE, batch_id="2026112013")  # the daily inbox
    Path(lake.state("landing", "orders", f"dt={DATE}", "hour=13", "bookmark.json")).unlink()
    with pytest.raises(LandingError, match="no longer lists"):
        land_batch(lake, "orders", DATE, hour=13)
    assert raw_tree(lake, "2026112013") == tree  # nothing was dropped


def test_a_batch_id_belongs_to_one_date(lake: Lake) -> None:
    land_batch(lake, "orders", DATE, batch_id="manual-1")
    with pytest.raises(LandingError, match="another date"):
        land_batch(lake, "orders", "2026-11-21", batch_id="manual-1")


def test_landing_logs_a_line_an_operator_can_grep(
    lake: Lake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="foodtaster")
    put(lake, "a.jsonl", b"1\n2\n")
    put(lake, "bad.jsonl.gz", b"not gzip")
    land_batch(lake, "orders", DATE)
    lines = [record.getMessage() for record in caplog.records]
    assert any(
        line.startswith("dataset=orders batch=20261120 ") and "files=1 unreadable=1 messages=2"
        in line and line.endswith("event=landed") for line in lines
    ), lines
    assert any("file=bad.jsonl.gz" in line and "event=file_unreadable" in line for line in lines)


@pytest.fixture
def memory_lake() -> Iterator[Lake]:
    root = f"/foodtaster-{uuid.uuid4().hex}"
    yield Lake(f"memory://{root}")
    fsspec.filesystem("memory").rm(root, recursive=True)


def test_the_lake_can_be_any_fsspec_uri(memory_lake: Lake) -> None:
    fs, inbox = fsspec.core.url_to_fs(memory_lake.inbox("orders", DATE))
    fs.pipe_file(f"{inbox}/a.jsonl", b"1\n2\n")
    fs.pipe_file(f"{inbox}/b.jsonl.gz", b"not gzip")

    result = land_batch(memory_lake, "orders", DATE, now=FIRST)

    assert [f["name"] for f in result.files] == ["a.jsonl"] and result.messages == 2
    assert [u["name"] for u in result.unreadable] == ["b.jsonl.gz"]
    _, raw = fsspec.core.url_to_fs(result.raw_path)
    assert fs.cat_file(f"{raw}/a.jsonl") == b"1\n2\n"
    assert fs.cat_file(f"{raw}/_unreadable/b.jsonl.gz") == b"not gzip"
    assert land_batch(memory_lake, "orders", DATE, now=LATER) == result


@pytest.mark.parametrize("bad", ["2026-13-45", "2026-02-30", "2026-00-01"])
def test_an_impossible_date_is_refused_at_every_entry_before_anything_is_written(
    lake: Lake, bad: str
) -> None:
    import importlib.util

    from foodtaster_airflow.steps import run_interval

    with pytest.raises(ValueError, match="not a calendar day"):
        land_batch(lake, "orders", bad)
    with pytest.raises(ValueError, match="not a calendar day"):
        run_interval({}, {"batch_date": bad}, "@daily")
    spec = importlib.util.spec_from_file_location(
        "validate_batch", Path(__file__).resolve().parents[2] / "spark_jobs" / "validate_batch.py"
    )
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    with pytest.raises(SystemExit) as exit_:
        job.parse_args(["--dataset", "orders", "--input", "x", "--batch-id", "b", "--batch-date", bad])
    assert exit_.value.code == 2
    assert not Path(lake.root).exists()  # nothing was written


def test_symlinks_under_the_inbox_are_refused_and_never_followed(
    lake: Lake, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="foodtaster")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(b'{"secret": 1}\n')
    put(lake, "a.jsonl", b"1\n")
    (Path(lake.inbox("orders", DATE)) / "linked.jsonl").symlink_to(outside / "secret.jsonl")
    result = land_batch(lake, "orders", DATE)
    assert [f["name"] for f in result.files] == ["a.jsonl"]
    assert result.refused == [{"source": f"inbox/orders/dt={DATE}/linked.jsonl",
                               "reason": inbox.SYMLINK}]
    assert any("event=file_refused" in r.getMessage() and "linked.jsonl" in r.getMessage()
               for r in caplog.records)
    from foodtaster.state.ledger import ledger_entry

    entry = ledger_entry(result, None, False, None, "foodtaster_orders", "run")
    assert entry["refused"] == result.refused  # the ledger says what was never read

    # a symlinked dt= folder lands nothing, and says so
    Path(lake.inbox("orders", "2026-11-21")).parent.mkdir(parents=True, exist_ok=True)
    Path(lake.inbox("orders", "2026-11-21")).symlink_to(outside)
    linked = land_batch(lake, "orders", "2026-11-21")
    assert linked.empty and linked.files == []
    assert linked.refused == [{"source": "inbox/orders/dt=2026-11-21", "reason": inbox.SYMLINK}]
    assert "secret.jsonl" not in json.dumps(raw_tree(lake, "20261121"), default=str)
    Path(lake.inbox("orders", DATE, 5)).symlink_to(outside)  # an hour= folder alike
    hourly = land_batch(lake, "orders", DATE, hour=5)
    assert hourly.empty and hourly.refused == [
        {"source": f"inbox/orders/dt={DATE}/hour=05", "reason": inbox.SYMLINK}
    ]


def test_a_colon_or_a_long_name_lands_under_a_name_hadoop_and_linux_take(lake: Lake) -> None:
    long_name = "x" * 244 + ".jsonl"  # 250 characters: legal, but not with a suffix added
    put(lake, "12:30:00.jsonl", b"1\n")
    put(lake, "12_30_00.jsonl", b"2\n")  # what the colon name becomes: a clash
    put(lake, long_name, b"3\n")
    result = land_batch(lake, "orders", DATE)
    by_source = {f["source"].rsplit("/", 1)[1]: f["name"] for f in result.files}
    assert ":" not in "".join(by_source.values()) and len(set(by_source.values())) == 3
    assert by_source[long_name] == long_name
    tree = raw_tree(lake, "20261120")
    assert {tree[name] for name in by_source.values()} == {b"1\n", b"2\n", b"3\n"}

    # the producer rewrites the long file: its new copy lands beside it, name still legal
    put(lake, long_name, b"4\n")
    again = land_batch(lake, "orders", DATE)
    renamed = [f["name"] for f in again.files if f["name"] not in by_source.values()]
    assert len(renamed) == 1 and len(renamed[0].encode()) <= inbox.NAME_MAX
    assert raw_tree(lake, "20261120")[renamed[0]] == b"4\n"


def test_a_gzip_bomb_stops_at_the_cap_and_is_quarantined_whole(lake: Lake) -> None:
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024), compresslevel=1)
    put(lake, "bomb.jsonl.gz", bomb)
    put(lake, "big.jsonl", b"x" * 5000 + b"\n")
    put(lake, "good.jsonl", b"1\n2\n")
    result = land_batch(lake, "orders", DATE, limits=lines.Limits(max_file_bytes=4096))
    assert [f["name"] for f in result.files] == ["good.jsonl"]
    reasons = {u["name"]: (u["rule"], u["reason"]) for u in result.unreadable}
    assert reasons == {
        "bomb.jsonl.gz": ("file.too_large", "over 4096 bytes decompressed (max_file_bytes)"),
        "big.jsonl": ("file.too_large", "over 4096 bytes (max_file_bytes)"),
    }
    assert raw_tree(lake, "20261120")["_unreadable/bomb.jsonl.gz"] == bomb

