"""The sample generator writes what its truth says: good lines pass the orders
contract, every poison line breaks what its kind claims, and a seed fixes every byte.

The checker here is plain Python on purpose: it restates the contract without
pandera or Spark, so the generator is not judged by the code it exists to test.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from foodtaster_dev.cli import main
from foodtaster_dev.sample import EDGE_NUMBERS, POISON_KINDS, LineTruth, SampleBatch, generate_batch

MAX_BYTES = 2048  # small, so the oversized lines stay small
CURRENCIES = {"USD", "EUR", "GBP", "JPY", "CHF"}
STATUSES = {"CREATED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED"}
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)")
MESSAGE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
BYTES_KINDS = {"invalid_utf8", "nul_byte", "oversized", "empty_line"}
PARSE_KINDS = {"truncated_json", "single_quotes", "nan", "trailing_comma", "top_level_array",
               "concatenated"}


def _reject_constant(name: str) -> float:
    raise ValueError(f"not strict JSON: {name}")


def strict_json(raw: bytes) -> object:
    """RFC 8259 as the parse layer means it: UTF-8, no NaN/Infinity."""
    return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def is_timestamp(value: object) -> bool:
    if not isinstance(value, str) or not ISO.fullmatch(value):
        return False
    try:
        datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


def contract_failures(rec: dict) -> set[str]:
    """The columns whose orders rule fails (`cross_field` for the status/amount rule)."""
    failed = set()
    ident = rec.get("message_id")
    if not (isinstance(ident, str) and MESSAGE_ID.fullmatch(ident)):
        failed.add("message_id")
    for column in ("order_id", "customer_id"):
        if not (isinstance(rec.get(column), str) and rec[column]):
            failed.add(column)
    amount = rec.get("amount")
    if not (is_number(amount) and 0 <= amount <= 1_000_000):
        failed.add("amount")
    if rec.get("currency") not in CURRENCIES:
        failed.add("currency")
    if rec.get("status") not in STATUSES:
        failed.add("status")
    if not is_timestamp(rec.get("created_at")):
        failed.add("created_at")
    items = rec.get("items")
    if not (isinstance(items, int) and not isinstance(items, bool) and 1 <= items <= 1000):
        failed.add("items")
    if not isinstance(rec.get("producer", ""), str | None):
        failed.add("producer")
    if rec.get("status") in {"PAID", "SHIPPED", "DELIVERED"} and not (
        is_number(amount) and amount > 0
    ):
        failed.add("cross_field")
    return failed


def read_lines(path: str) -> list[bytes]:
    data = Path(path).read_bytes()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    assert data.endswith(b"\n"), "every line, the last too, ends with \\n"
    assert b"\r" not in data
    return data.split(b"\n")[:-1]


def lines_with_truth(batch: SampleBatch) -> list[tuple[LineTruth, bytes]]:
    by_name = {Path(p).name: read_lines(p) for p in batch.files}
    return [(t, by_name[t.file][t.line - 1]) for t in batch.truth]


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> SampleBatch:
    return generate_batch(tmp_path_factory.mktemp("batch"), messages=3000, seed=11,
                          max_message_bytes=MAX_BYTES)


@pytest.fixture(scope="module")
def rows(batch: SampleBatch) -> list[tuple[LineTruth, bytes]]:
    return lines_with_truth(batch)


def of_kind(rows: list[tuple[LineTruth, bytes]], kind: str) -> list[bytes]:
    found = [raw for t, raw in rows if t.kind == kind]
    assert found, f"no {kind} line"
    return found


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    def write(name: str, seed: int) -> list[bytes]:
        made = generate_batch(tmp_path / name, messages=500, seed=seed, max_message_bytes=MAX_BYTES)
        return [Path(p).read_bytes() for p in made.files]

    first = write("a", 3)
    assert write("b", 3) == first  # the gzip file too: no mtime or name in its header
    assert write("c", 4) != first


def test_every_kind_appears_and_oversized_at_most_twice(batch: SampleBatch) -> None:
    kinds = Counter(t.kind for t in batch.truth)
    assert set(kinds) == {"good", *POISON_KINDS}
    assert kinds["oversized"] <= 2
    assert kinds["conflicting_duplicate"] % 2 == 0


def test_line_counts_match_truth(batch: SampleBatch) -> None:
    assert len(batch.truth) == batch.messages == 3000
    per_file = defaultdict(list)
    for t in batch.truth:
        per_file[t.file].append(t.line)
    assert sorted(per_file) == sorted(Path(p).name for p in batch.files)
    for path in batch.files:
        numbers = per_file[Path(path).name]
        assert numbers == list(range(1, len(read_lines(path)) + 1))
    counts = batch.counts()
    assert set(counts) == {"valid", "quarantined", "duplicate_dropped"}
    assert Counter(counts) == Counter(t.expected for t in batch.truth)  # Counter: 0 == missing
    assert sum(counts.values()) == batch.messages


def test_poison_rate_is_about_what_was_asked(batch: SampleBatch) -> None:
    counts = batch.counts()
    poison = counts["quarantined"] + counts["duplicate_dropped"]
    assert 0.04 * batch.messages <= poison <= 0.06 * batch.messages


def test_one_file_is_gzip_the_others_plain(batch: SampleBatch) -> None:
    gz = [p for p in batch.files if p.endswith(".jsonl.gz")]
    plain = [p for p in batch.files if p.endswith(".jsonl")]
    assert len(gz) == 1 and len(plain) == 2
    assert gzip.decompress(Path(gz[0]).read_bytes())
    assert Path(gz[0]).read_bytes()[4:8] == bytes(4)  # mtime 0: same bytes on every run
    for path in plain:
        assert not Path(path).read_bytes().startswith(b"\x1f\x8b")
    assert all(Path(p).is_absolute() for p in batch.files)


def test_good_lines_satisfy_the_contract(rows: list[tuple[LineTruth, bytes]]) -> None:
    good = [raw for t, raw in rows if t.kind == "good"]
    records = [strict_json(raw) for raw in good]
    assert all(isinstance(r, dict) for r in records)
    failing = [(r, contract_failures(r)) for r in records if contract_failures(r)]
    assert not failing, failing[:3]
    ids = [r["message_id"] for r in records]
    assert len(set(ids)) == len(ids)
    assert all(len(raw) <= MAX_BYTES and b"\x00" not in raw for raw in good)
    assert all(t.expected == "valid" for t, _ in rows if t.kind == "good")


def test_good_lines_look_like_real_orders(rows: list[tuple[LineTruth, bytes]]) -> None:
    records = [json.loads(raw) for t, raw in rows if t.kind == "good"]
    amounts = sorted(r["amount"] for r in records)
    assert 1 <= amounts[len(amounts) // 2] <= 10_000
    assert any(isinstance(a, float) and a != int(a) for a in amounts)  # cents
    day = [
        datetime.fromisoformat(r["created_at"].replace("Z", "+00:00")).astimezone(UTC).date()
        for r in records
    ]
    assert Counter(str(d) for d in day)["2026-11-20"] >= 0.95 * len(records)
    assert {r.get("producer") for r in records} >= {"checkout-svc", "fulfilment-svc"}
    assert any(set(r) - {"message_id", "order_id", "customer_id", "amount", "currency", "status",
                         "created_at", "items", "producer"} for r in records)  # extra fields


def test_bytes_layer_poison(batch: SampleBatch, rows: list[tuple[LineTruth, bytes]]) -> None:
    for raw in of_kind(rows, "invalid_utf8"):
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")
    for raw in of_kind(rows, "nul_byte"):
        assert b"\x00" in raw and b"\\u0000" not in raw
    for raw in of_kind(rows, "oversized"):
        assert len(raw) > MAX_BYTES
        assert not contract_failures(strict_json(raw))  # too big is its only fault
    sizes = {Path(p).name: len(read_lines(p)) for p in batch.files}
    empties = [t for t, _ in rows if t.kind == "empty_line"]
    assert empties and all(raw == b"" for t, raw in rows if t.kind == "empty_line")
    assert all(1 < t.line < sizes[t.file] for t in empties)  # in the middle of a file
    assert all(raw for t, raw in rows if t.kind != "empty_line")


def test_parse_layer_poison(rows: list[tuple[LineTruth, bytes]]) -> None:
    for kind in PARSE_KINDS - {"top_level_array"}:
        for raw in of_kind(rows, kind):
            with pytest.raises(ValueError):
                strict_json(raw)
    for raw in of_kind(rows, "single_quotes"):
        assert raw.startswith(b"{'")
    for raw in of_kind(rows, "nan"):
        assert b"NaN" in raw and math.isnan(json.loads(raw)["amount"])  # lenient parsers take it
    for raw in of_kind(rows, "trailing_comma"):
        assert re.search(rb",\s*[}\]]", raw)
    for raw in of_kind(rows, "truncated_json"):
        assert raw.startswith(b"{")  # cut short, so strict parsing failed above
    for raw in of_kind(rows, "top_level_array"):
        parsed = strict_json(raw)
        assert isinstance(parsed, list) and isinstance(parsed[0], dict)
    for raw in of_kind(rows, "concatenated"):
        first, end = json.JSONDecoder().raw_decode(raw.decode())
        assert isinstance(first, dict) and isinstance(json.loads(raw.decode()[end:]), dict)


CONTRACT_RULE = {
    "missing_field": None, "null_required": None, "multi_fail": None,
    "wrong_type_amount": {"amount"}, "float_items": {"items"}, "out_of_range": None,
    "unknown_enum": None, "bad_timestamp": {"created_at"}, "bad_message_id": {"message_id"},
    "cross_field": {"cross_field"}, "html_payload": {"currency"},
}


def test_contract_layer_poison_fails_what_it_claims(rows: list[tuple[LineTruth, bytes]]) -> None:
    for kind, rule in CONTRACT_RULE.items():
        for raw in of_kind(rows, kind):
            rec = strict_json(raw)
            assert isinstance(rec, dict), kind
            failed = contract_failures(rec)
            assert failed, (kind, raw)
            if rule is not None:
                assert failed == rule, (kind, failed, raw)
    for raw in of_kind(rows, "float_items"):
        assert json.loads(raw)["items"] == 2.0 and re.search(rb'"items":\s*2\.0', raw)
    for raw in of_kind(rows, "wrong_type_amount"):
        assert isinstance(json.loads(raw)["amount"], str)
    for raw in of_kind(rows, "multi_fail"):
        assert len(contract_failures(json.loads(raw))) >= 3
    for raw in of_kind(rows, "html_payload"):
        assert "<script>alert(1)</script>" in json.loads(raw)["customer_id"]
    for kind in ("missing_field", "null_required", "out_of_range", "unknown_enum"):
        assert all(len(contract_failures(json.loads(raw))) == 1 for raw in of_kind(rows, kind))


def test_edge_numbers_are_valid_json_that_the_typed_column_cannot_hold(
    rows: list[tuple[LineTruth, bytes]],
) -> None:
    from foodtaster_dev.oracle import decode, out_of_range

    edges = of_kind(rows, "edge_number")
    assert edges
    literals = set()
    for raw in edges:
        rec = decode(raw)
        beyond = {c for c, t in (("amount", "number"), ("items", "integer")) if out_of_range(t, rec[c])}
        assert len(beyond) == 1, raw
        column = beyond.pop()
        literals.add(re.search(rf'"{column}":([-0-9.eE]+)'.encode(), raw).group(1).decode())
        assert not contract_failures({**rec, column: 1}), raw  # the edge number is its only fault
    assert literals <= {literal for _, literal in EDGE_NUMBERS}


def test_redelivery_is_a_byte_identical_copy_of_an_earlier_good_line(
    rows: list[tuple[LineTruth, bytes]],
) -> None:
    seen_good: set[bytes] = set()
    redeliveries = 0
    for t, raw in sorted(rows, key=lambda row: (row[0].file, row[0].line)):
        if t.kind == "redelivery":
            assert raw in seen_good and t.expected == "duplicate_dropped"
            redeliveries += 1
        elif t.kind == "good":
            seen_good.add(raw)
    assert redeliveries
    assert all(raw not in seen_good for t, raw in rows if t.kind not in ("good", "redelivery"))


def test_conflicting_duplicates_share_an_id_and_differ(rows: list[tuple[LineTruth, bytes]]) -> None:
    by_id = defaultdict(list)
    for raw in of_kind(rows, "conflicting_duplicate"):
        by_id[json.loads(raw)["message_id"]].append(raw)
    assert by_id and all(len(pair) == 2 and pair[0] != pair[1] for pair in by_id.values())
    for pair in by_id.values():
        assert all(not contract_failures(json.loads(raw)) for raw in pair)  # only the clash
    other_ids = {
        json.loads(raw).get("message_id")
        for t, raw in rows if t.kind in {"good"} | set(CONTRACT_RULE)
    }
    assert not other_ids & set(by_id)
    assert all(t.expected == "quarantined" for t, _ in rows if t.kind == "conflicting_duplicate")


def test_every_poison_line_is_quarantined_or_dropped(batch: SampleBatch) -> None:
    for t in batch.truth:
        expected = {"good": "valid", "redelivery": "duplicate_dropped"}.get(t.kind, "quarantined")
        assert t.expected == expected, t


def test_resent_lines_take_good_places_and_leave_every_other_line_as_it_was(tmp_path: Path) -> None:
    args = {"messages": 200, "seed": 8, "poison_rate": 0.1, "files": 2, "gzip_files": 1}
    plain = generate_batch(tmp_path / "plain", **args)
    resend = [b'{"message_id": "p-1-2", "status": "LOST"}', b"\xff not utf-8 {"]
    with_resent = generate_batch(tmp_path / "resent", **args, resend=resend)
    before = [line for f in plain.files for line in read_lines(f)]
    after = [line for f in with_resent.files for line in read_lines(f)]
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert [after[i] for i in changed] == resend and len(after) == 200
    kinds = [t.kind for t in with_resent.truth]
    assert [kinds[i] for i in changed] == ["resent", "resent"]
    assert [plain.truth[i].kind for i in changed] == ["good", "good"]
    assert with_resent.counts()["quarantined"] == plain.counts()["quarantined"] + 2
    assert with_resent.counts()["valid"] == plain.counts()["valid"] - 2


def test_smallest_batch_that_promises_every_kind(tmp_path: Path) -> None:
    made = generate_batch(tmp_path, messages=4 * len(POISON_KINDS), poison_rate=0.0, seed=1)
    assert {t.kind for t in made.truth} == {"good", *POISON_KINDS}


def test_only_the_requested_kinds(tmp_path: Path) -> None:
    kinds = ["nan", "redelivery", "empty_line"]
    made = generate_batch(tmp_path, messages=100, kinds=kinds, poison_rate=0.3, files=2)
    found = Counter(t.kind for t in made.truth)
    assert set(found) == {"good", *kinds}
    assert sum(found[k] for k in kinds) == 30


def test_empty_lines_stay_inside_files_even_when_crowded(tmp_path: Path) -> None:
    made = generate_batch(tmp_path, messages=30, files=10, gzip_files=0, kinds=["empty_line"],
                          poison_rate=10 / 30)
    empties = [(t.file, t.line) for t in made.truth if t.kind == "empty_line"]
    assert sorted(empties) == [(Path(p).name, 2) for p in made.files]  # the only inside line


def test_without_truth_the_counts_stay(tmp_path: Path) -> None:
    lean = generate_batch(tmp_path / "lean", messages=400, keep_truth=False)
    full = generate_batch(tmp_path / "full", messages=400)
    assert lean.truth == [] and lean.counts() == full.counts()
    assert Counter(lean.counts()) == Counter(t.expected for t in full.truth)
    assert [Path(p).read_bytes() for p in lean.files] == [Path(p).read_bytes() for p in full.files]


@pytest.mark.parametrize("bad", [
    {"kinds": ["nope"]}, {"files": 0}, {"messages": 2, "files": 3}, {"gzip_files": 4},
    {"poison_rate": 1.5}, {"batch_date": "2026-13-01"}, {"max_message_bytes": 0},
])
def test_bad_arguments_are_refused(tmp_path: Path, bad: dict) -> None:
    with pytest.raises(ValueError):
        generate_batch(tmp_path, **bad)


def test_cli_writes_batch_and_truth(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    truth = tmp_path / "truth.jsonl"
    argv = ["generate-sample", "--out", str(tmp_path / "out"), "--messages", "300",
            "--seed", "5", "--poison-rate", "0.1", "--date", "2026-11-21", "--files", "2",
            "--truth", str(truth)]
    assert main(argv) == 0
    assert "wrote 300 lines in 2 files" in capsys.readouterr().out
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    assert len(records) == 300 and set(records[0]) == {"file", "line", "kind", "expected"}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "orders-2026-11-21-part-0000.jsonl", "orders-2026-11-21-part-0001.jsonl.gz"]


def test_cli_refuses_truth_inside_the_batch(tmp_path: Path) -> None:
    argv = ["generate-sample", "--out", str(tmp_path), "--truth", str(tmp_path / "t.jsonl")]
    assert main(argv) == 2
    assert not any(tmp_path.iterdir())


def test_importable_without_spark_or_pandas() -> None:
    code = ("import sys, foodtaster_dev.sample; "
            "assert not {'pyspark', 'pandas', 'pandera'} & set(sys.modules), sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
