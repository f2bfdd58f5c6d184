"""A hand run on a plain folder (issue 39): no landing manifest, yet the same byte limits as
the land task. A gzip bomb (1.2 GB decompressed) and a 400 MB line beside good messages:
the bomb is `file.too_large`, the line `line.too_large`, every good message is published,
and the JVM never holds either whole. The hostile files are generated, never committed."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

from pyspark.sql import functions as F
from support.frames import batch_frame

from foodtaster.engine.batch.job import BatchRun
from foodtaster.engine.run import run_batch
from foodtaster.registry import get_dataset
from foodtaster.state.lake import Lake, new_run_id
from foodtaster.state.tables import QUARANTINE
from foodtaster_dev import sample

DATE = "2026-11-22"
MIB = 1024 * 1024


def _gzip_bomb(path: Path, decompressed: int) -> None:
    zeros = bytes(16 * MIB)
    with gzip.open(path, "wb", compresslevel=1) as bomb:
        for _ in range(decompressed // len(zeros)):
            bomb.write(zeros)


def _one_huge_line(path: Path, size: int) -> None:
    piece = b'{"message_id": "' + b"x" * (MIB - 20)
    with path.open("wb") as huge:
        for _ in range(size // len(piece)):
            huge.write(piece)
        huge.write(b'"}\n{"message_id": "after the huge line"}\n')


def test_a_hand_run_on_a_plain_folder_applies_the_landing_limits(spark, tmp_path):
    folder = tmp_path / "by-hand"
    generated = sample.generate_batch(folder, messages=300, seed=3, poison_rate=0.0, files=2, gzip_files=1,
                                      batch_date=DATE, kinds=["nan"])
    good = sum(t.kind == "good" for t in generated.truth)
    _gzip_bomb(folder / "bomb.jsonl.gz", 1200 * MIB)
    _one_huge_line(folder / "huge.jsonl", 400 * MIB)
    assert not (folder / "_manifest.json").exists()

    lake = Lake(str(tmp_path / "lake"))
    config = dataclasses.replace(get_dataset("orders"), group_by=None, order_by=None)
    run = BatchRun(config=config, input_path=str(folder), lake=lake, batch_id="20261122", batch_date=DATE,
                   gate=False)
    summary = run_batch(spark, run).to_json()

    assert summary["reasons"]["file.too_large"] == 1 and summary["reasons"]["line.too_large"] == 1
    assert summary["valid"] == good
    assert summary["messages"] == summary["valid"] + summary["quarantined"] + summary["duplicates_dropped"]
    quarantine = batch_frame(spark, lake, "orders", QUARANTINE, run.batch_id)
    too_large = quarantine.where(F.exists("reasons", lambda r: r.rule.endswith("too_large"))).select(
        F.octet_length("_raw").alias("kept"), "_line_number").collect()
    assert all(row.kept <= MIB for row in too_large)  # only their first bytes: the whole stays in raw/
    assert sorted(row._line_number for row in too_large if row._line_number is not None) == [1]

    again = run_batch(spark, dataclasses.replace(run, run_id=new_run_id())).to_json()  # a rerun: the same
    assert {k: again[k] for k in ("valid", "quarantined", "reasons")} == {
        k: summary[k] for k in ("valid", "quarantined", "reasons")}
