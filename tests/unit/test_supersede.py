"""Superseding a delivery: new files for a held batch replace its landed files only when the
inbox says so (`_SUPERSEDES`); mixing them in silently is refused. Recorded in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foodtaster.sources.inbox import land_batch
from foodtaster.sources.supersede import SUPERSEDES, SupersedeError
from foodtaster.state.lake import Lake, write_json

DATE = "2026-11-21"


def _put(lake: Lake, name: str, data: bytes) -> None:
    path = Path(lake.inbox("orders", DATE)) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _judged(lake: Lake, batch_id: str, published: bool) -> None:
    write_json(lake.summary("orders", batch_id), {"batch_id": batch_id, "batch_date": DATE,
                                                  "published": published, "verdict": {"publish": published}})


@pytest.fixture
def held(tmp_path: Path) -> tuple[Lake, str]:
    lake = Lake(str(tmp_path / "lake"))
    _put(lake, "poisoned.jsonl", b'{"a": 1}\n{bad\n')
    first = land_batch(lake, "orders", DATE)
    _judged(lake, first.batch_id, published=False)
    return lake, first.batch_id


def test_new_files_for_a_held_batch_without_the_marker_are_refused(held):
    lake, batch_id = held
    _put(lake, "corrected.jsonl", b'{"a": 1}\n{"a": 2}\n')
    with pytest.raises(SupersedeError, match="would mix the poisoned delivery.*_SUPERSEDES"):
        land_batch(lake, "orders", DATE)
    manifest = json.loads((Path(lake.raw("orders", DATE, batch_id)) / "_manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == ["poisoned.jsonl"]  # nothing changed


def test_the_marker_replaces_the_delivery_and_the_manifest_says_so(held):
    lake, batch_id = held
    _put(lake, "corrected.jsonl", b'{"a": 1}\n{"a": 2}\n{"a": 3}\n')
    _put(lake, SUPERSEDES, json.dumps({"why": "producer fixed the encoder", "by": "shop-team"}).encode())
    landed = land_batch(lake, "orders", DATE)
    assert [f["name"] for f in landed.files] == ["corrected.jsonl"] and landed.messages == 3
    assert landed.superseded["why"] == "producer fixed the encoder"
    assert [f["name"] for f in landed.superseded["files"]] == ["poisoned.jsonl"]
    raw = Path(lake.raw("orders", DATE, batch_id))
    assert sorted(p.name for p in raw.iterdir()) == ["_manifest.json", "corrected.jsonl"]
    manifest = json.loads((raw / "_manifest.json").read_text())
    assert manifest["superseded"][0]["by"] == "shop-team"
    # A rerun lands the same batch again: the old delivery never comes back.
    again = land_batch(lake, "orders", DATE)
    assert [f["name"] for f in again.files] == ["corrected.jsonl"] and again.superseded is None
    assert json.loads((raw / "_manifest.json").read_text())["superseded"] == manifest["superseded"]


def test_a_published_batch_takes_late_files_as_before(held):
    lake, batch_id = held
    _judged(lake, batch_id, published=True)
    _put(lake, "late.jsonl", b'{"a": 9}\n')
    landed = land_batch(lake, "orders", DATE)
    assert sorted(f["name"] for f in landed.files) == ["late.jsonl", "poisoned.jsonl"]


def test_a_marker_without_why_is_refused(held):
    lake, _ = held
    _put(lake, "corrected.jsonl", b'{"a": 1}\n')
    _put(lake, SUPERSEDES, b'{"by": "x"}')
    with pytest.raises(SupersedeError, match="must say why"):
        land_batch(lake, "orders", DATE)


def test_the_ledger_entry_of_the_rerun_names_the_replaced_delivery(held):
    from foodtaster.state.ledger import ledger_entry

    lake, _ = held
    _put(lake, "corrected.jsonl", b'{"a": 1}\n')
    _put(lake, SUPERSEDES, b'{"why": "encoder fixed"}')
    entry = ledger_entry(land_batch(lake, "orders", DATE), None, False, None, "dag", "run")
    assert entry["superseded"]["why"] == "encoder fixed"
    assert [f["name"] for f in entry["superseded"]["files"]] == ["poisoned.jsonl"]
