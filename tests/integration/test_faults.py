"""Hostile files and faults (issue 14) in process, on the shared SparkSession, with real files:
a gzip bomb, a 300 MB line, names Hadoop or Linux choke on, symlinks. Every such file ends in
the quarantine and the rest of the batch is processed."""

from __future__ import annotations

import threading
import time
import zlib
from pathlib import Path

import pytest
from support.frames import batch_frame

from foodtaster.engine.batch.accounting import CountsDoNotAddUp
from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.sources.inbox import land_batch
from foodtaster.state.lake import FAULT_AT_ENV, FAULT_DIR_ENV, Lake
from foodtaster.state.tables import QUARANTINE, VALID, DatasetTables
from foodtaster_dev import sample

DATE = "2026-11-20"
MiB = 1024 * 1024


def _gzip_bomb(path: Path, gib: int = 1) -> None:
    """`gib` GiB of zeros, about 1 MiB compressed, written in pieces (never in memory)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = bytes(MiB)
    with path.open("wb") as out:
        for _ in range(gib * 1024):
            out.write(packer.compress(zeros))
        out.write(packer.flush())


def test_hostile_files_end_in_the_quarantine_and_the_rest_is_processed(spark, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    inbox = Path(lake.inbox("orders", DATE))
    generated = sample.generate_batch(inbox, messages=70, seed=3, poison_rate=0.0, kinds=[],
                                      files=1, gzip_files=0)
    good_file = Path(generated.files[0])
    everything = good_file.read_bytes().splitlines(keepends=True)
    good_file.write_bytes(b"".join(everything[:60]))
    lines = everything[59:]  # ten good messages, each used once below
    _gzip_bomb(inbox / "bomb.jsonl.gz")
    with (inbox / "long.jsonl").open("wb") as out:  # lines 1-2 good, 3 is 2 MiB, 4 good, 5 is 300 MB
        out.write(lines[1] + lines[2] + b"y" * (2 * MiB) + b"\r\n" + lines[3])
        for _ in range(300):
            out.write(b"x" * MiB)  # no newline: the file ends inside this line
    (inbox / "12:30 with space+plus.jsonl").write_bytes(lines[4] + lines[5])
    (inbox / ("n" * 244 + ".jsonl")).write_bytes(lines[6])
    (tmp_path / "outside.jsonl").write_bytes(lines[7])
    (inbox / "linked.jsonl").symlink_to(tmp_path / "outside.jsonl")

    landed = land_batch(lake, "orders", DATE)
    for name in ("bomb.jsonl.gz", "long.jsonl"):
        (inbox / name).unlink()  # 1.3 GB of test data gone before Spark reads the raw copies
    assert [r["source"].rsplit("/", 1)[1] for r in landed.refused] == ["linked.jsonl"]
    long_entry = next(f for f in landed.files if f["name"] == "long.jsonl")
    assert [(t["line"], t["bytes"]) for t in long_entry["too_large"]] == [(3, 2 * MiB), (5, 300 * MiB)]

    run = BatchRun(config=get_dataset("orders"), input_path=landed.raw_path, lake=lake,
                   batch_id=landed.batch_id, batch_date=DATE, gate=False)
    summary = run_batch(spark, run).to_json()
    raw_copy = Path(landed.raw_path) / "long.jsonl"
    raw_copy.unlink()

    # 60 + long.jsonl's 5 lines + 2 + 1 messages, and the bomb as one
    assert summary["messages"] == 60 + 5 + 2 + 1 + 1
    assert summary["quarantined"] == 3 and summary["duplicates_dropped"] == 0
    assert summary["valid"] == summary["messages"] - 3
    assert summary["reasons"] == {"line.too_large": 2, "file.too_large": 1}
    quarantine = batch_frame(spark, lake, "orders", QUARANTINE, landed.batch_id)
    got = {(r._source_file.rsplit("/", 1)[1], r._line_number, r.reasons[0].rule, len(r._raw))
           for r in quarantine.collect()}
    assert got == {("long.jsonl", 3, "line.too_large", 1024), ("long.jsonl", 5, "line.too_large", 1024),
                   ("bomb.jsonl.gz", None, "file.too_large", 1024 * 1024)}
    valid = batch_frame(spark, lake, "orders", VALID, landed.batch_id)
    numbered = {(r._source_file.rsplit("/", 1)[1], r._line_number) for r in valid.collect()
                if "long" in r._source_file or "12_30" in r._source_file}
    assert numbered == {("long.jsonl", 1), ("long.jsonl", 2), ("long.jsonl", 4),
                        ("12_30 with space+plus.jsonl", 1), ("12_30 with space+plus.jsonl", 2)}
    spelled = {r._source_file for r in valid.select("_source_file").distinct().collect()}
    assert f"file:{landed.raw_path}/12_30 with space+plus.jsonl" in spelled


def _at_fault(monkeypatch, tmp_path: Path, step: str, action) -> threading.Thread:
    """Stop the job at `step` (`fault_point`), run `action` there, then let it go on."""
    folder = tmp_path / "faults"
    folder.mkdir()
    monkeypatch.setenv(FAULT_AT_ENV, step)
    monkeypatch.setenv(FAULT_DIR_ENV, str(folder))

    def act() -> None:
        deadline = time.monotonic() + 600
        while not (folder / f"{step}.reached").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            action()
        finally:
            (folder / f"{step}.go").touch()

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def test_rows_lost_during_the_write_fail_the_batch_and_nothing_is_committed(
    spark, tmp_path, monkeypatch
):
    lake = Lake(str(tmp_path / "lake"))
    inbox = Path(lake.inbox("orders", DATE))
    sample.generate_batch(inbox, messages=600, seed=8, poison_rate=0.1, files=2, gzip_files=0,
                          kinds=["redelivery", "nan"])
    landed = land_batch(lake, "orders", DATE)
    config = get_dataset("orders")
    first = run_batch(spark, BatchRun(config=config, input_path=landed.raw_path, lake=lake,
                                      batch_id=landed.batch_id, batch_date=DATE, gate=False)).to_json()
    assert first["duplicates_dropped"] > 0 and first["published"]
    tables = DatasetTables(lake, "orders")
    before = {zone: tables.table(zone).metadata.refs for zone in (VALID, QUARANTINE)}
    summary_before = Path(lake.summary("orders", landed.batch_id)).read_bytes()

    folder = tables.run_folder(VALID, tables.table(VALID), DATE, landed.batch_id, "lossy")
    run_valid = Path(folder.removeprefix("file://"))
    thread = _at_fault(monkeypatch, tmp_path, "written",
                       lambda: [p.unlink() for p in sorted(run_valid.glob("*.parquet"))[:1]])
    with pytest.raises(CountsDoNotAddUp, match=r"600 messages read but \d+ valid"):
        run_batch(spark, BatchRun(config=config, input_path=landed.raw_path, lake=lake,
                                  batch_id=landed.batch_id, batch_date=DATE, gate=False,
                                  run_id="lossy"))
    thread.join(5)
    # no snapshot, no branch, no tag moved: main still holds the first run's rows alone
    assert {zone: tables.table(zone).metadata.refs for zone in (VALID, QUARANTINE)} == before
    assert tables.batch(VALID, landed.batch_id).rows == first["valid"]
    assert Path(lake.summary("orders", landed.batch_id)).read_bytes() == summary_before


def test_input_changed_after_the_pass_fails_the_batch_with_the_row_named(spark, tmp_path, monkeypatch):
    """A suspect that passed is judged on its bytes read again from the raw copy; when they are not
    the bytes the pass judged (the landed copy changed under the job), the batch fails naming the
    row, and nothing is written in its place."""
    lake = Lake(str(tmp_path / "lake"))
    inbox = Path(lake.inbox("orders", DATE))
    sample.generate_batch(inbox, messages=300, seed=5, poison_rate=0.1, files=1, gzip_files=0,
                          kinds=["redelivery"])
    landed = land_batch(lake, "orders", DATE)
    (raw_file,) = Path(landed.raw_path).glob("*.jsonl")

    def rewrite() -> None:  # the same lines, the same lengths, other bytes
        raw_file.write_bytes(raw_file.read_bytes().replace(b'"currency"', b'"CURRENCY"'))

    thread = _at_fault(monkeypatch, tmp_path, "flagged", rewrite)
    changed = r"the bytes of \S+ row \d+ read again differ from those the pass judged"
    with pytest.raises(Exception, match=changed):
        run_batch(spark, BatchRun(config=get_dataset("orders"), input_path=landed.raw_path, lake=lake,
                                  batch_id=landed.batch_id, batch_date=DATE, gate=False))
    thread.join(5)
    assert not Path(lake.summary("orders", landed.batch_id)).exists()
    tables = DatasetTables(lake, "orders")
    assert tables.load(VALID) is None and tables.load(QUARANTINE) is None  # nothing written
