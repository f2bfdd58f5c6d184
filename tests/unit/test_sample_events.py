"""The order_events generator writes what its truth says: good lines are nested messages
that satisfy the contract, every poison line fails exactly where its reasons say, the
reasons name rules of the contract, and a seed fixes every byte.

The judge here is plain Python on purpose: it restates the contract's shape without
pandera or Spark, so the generator is not judged by the code it exists to test. The rule
ids are held to the contract through `rules.rule_id`, which is what the engine names them by.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from foodtaster_dev.cli import main
from foodtaster_dev.sample import SampleBatch
from foodtaster_dev.sample_events import POISON_KINDS, EventTruth, generate_events

BYTES_AND_PARSE = {"invalid_utf8": "line.not_utf8", "truncated_json": "json.invalid",
                   "too_deep": "json.too_deep"}
EVENT_TYPES = {"com.shop.order.created", "com.shop.order.paid", "com.shop.order.shipped"}
COUNTRIES = {"US", "DE", "FR", "GB", "JP", "CH"}
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)")
ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
SKU = re.compile(r"SKU-[0-9]{5}")
CUSTOMER_ID = re.compile(r"c-[0-9]{5}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[a-z]{2,}")
ZIP = re.compile(r"[0-9A-Z -]{3,10}")
MISSING = object()
# The required fields under `data` (a nullable one passes a null `data`).
DATA_REQUIRED = {"data.order_id": False, "data.customer.id": False, "data.customer.email": False,
                 "data.lines": False, "data.total": False, "data.delivery_date": True}


# ---------------------------------------------------------------- an independent judge


class Judge:
    """The contract's verdict on one parsed message as (category, column) pairs; category:
    required | not_nullable | type | out_of_range | check."""

    def __init__(self) -> None:
        self.found: set[tuple[str, str]] = set()

    def value(self, column: str, value: object, json_type: str, ok=None, *,
              nullable: bool = False) -> None:
        if value is MISSING:
            self.found.add(("required", column))
        elif value is None:
            if not nullable:
                self.found.add(("not_nullable", column))
        elif not self.typed(value, json_type):
            self.found.add(("type", column))
        elif json_type.startswith("decimal") and not self.fits(value, json_type):
            self.found.add(("out_of_range", column))
        elif ok is not None and not ok(value):
            self.found.add(("check", column))

    @staticmethod
    def typed(value: object, json_type: str) -> bool:
        if isinstance(value, bool):
            return False
        if json_type == "string":
            return isinstance(value, str)
        if json_type == "integer":
            return isinstance(value, int)
        if json_type == "date":
            if not (isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)):
                return False
            try:
                date.fromisoformat(value)
            except ValueError:
                return False
            return True
        return isinstance(value, int | Decimal)  # decimal(p,s)

    @staticmethod
    def fits(value: int | Decimal, json_type: str) -> bool:
        precision, scale = map(int, re.fullmatch(r"decimal\((\d+),(\d+)\)", json_type).groups())
        number = Decimal(value).normalize()
        return number.as_tuple().exponent >= -scale and abs(number) < 10 ** (precision - scale)

    def object_or_none(self, column: str, value: object, required: dict[str, bool],
                       optional: tuple[str, ...] = ()) -> dict | None:
        """An undeclared object on the path: missing takes its required fields with it, null
        makes every field under it null, the `optional` (not nullable) ones too."""
        if value is MISSING or value is None:
            for path, nullable in required.items():
                if value is MISSING:
                    self.found.add(("required", path))
                elif not nullable:
                    self.found.add(("not_nullable", path))
            if value is None:
                self.found.update(("not_nullable", path) for path in optional)
            return None
        if not isinstance(value, dict):
            self.found.add(("type", column))
            return None
        return value

    def message(self, rec: dict) -> set[tuple[str, str]]:
        self.value("id", rec.get("id", MISSING), "string", ID.fullmatch)
        self.value("source", rec.get("source", MISSING), "string", lambda v: v.startswith("/shop/"))
        self.value("specversion", rec.get("specversion", MISSING), "string", lambda v: v == "1.0")
        self.value("type", rec.get("type", MISSING), "string", EVENT_TYPES.__contains__)
        self.value("time", rec.get("time", MISSING), "string", is_timestamp)
        data = self.object_or_none("data", rec.get("data", MISSING), DATA_REQUIRED, optional=("data.tags",))
        if data is not None:
            self.data(data)
        return self.found

    def data(self, data: dict) -> None:
        self.value("data.order_id", data.get("order_id", MISSING), "string", len)
        customer = self.object_or_none(
            "data.customer", data.get("customer", MISSING),
            {k: v for k, v in DATA_REQUIRED.items() if k.startswith("data.customer.")})
        if customer is not None:
            self.value("data.customer.id", customer.get("id", MISSING), "string", CUSTOMER_ID.fullmatch)
            self.value("data.customer.email", customer.get("email", MISSING), "string",
                       EMAIL.fullmatch)
            address = customer.get("address")  # optional and nullable: then nothing under it
            if address is not None and not isinstance(address, dict):
                self.found.add(("type", "data.customer.address"))
            elif address is not None:
                prefix = "data.customer.address."
                self.value(prefix + "street", address.get("street", MISSING), "string", len)
                self.value(prefix + "zip", address.get("zip", MISSING), "string", ZIP.fullmatch)
                self.value(prefix + "country", address.get("country", MISSING), "string",
                           COUNTRIES.__contains__)
        self.array("data.lines", data.get("lines", MISSING), 1, 100, self.order_line)
        tags = data.get("tags", MISSING)
        if tags is not MISSING:
            self.array("data.tags", tags, 0, 10, self.tag)
        self.value("data.total", data.get("total", MISSING), "decimal(12,2)", lambda v: v >= 0)
        self.value("data.delivery_date", data.get("delivery_date", MISSING), "date", nullable=True)

    def array(self, column: str, value: object, low: int, high: int, element) -> None:
        if value is MISSING:
            self.found.add(("required", column))
        elif value is None:
            self.found.add(("not_nullable", column))
        elif not isinstance(value, list):
            self.found.add(("type", column))
        else:
            if not low <= len(value) <= high:
                self.found.add(("check", column))
            for i, item in enumerate(value):
                element(f"{column}[{i}]", item)

    def order_line(self, column: str, item: object) -> None:
        if item is None:
            self.found.add(("not_nullable", column))
        elif not isinstance(item, dict):
            self.found.add(("type", column))
        else:
            self.value(f"{column}.sku", item.get("sku", MISSING), "string", SKU.fullmatch)
            self.value(f"{column}.qty", item.get("qty", MISSING), "integer", lambda v: 1 <= v <= 1000)
            self.value(f"{column}.price", item.get("price", MISSING), "decimal(10,2)", lambda v: v >= 0)

    def tag(self, column: str, item: object) -> None:
        self.value(column, item, "string", lambda v: 1 <= len(v) <= 32)


def is_timestamp(value: str) -> bool:
    if not ISO.fullmatch(value):
        return False
    try:
        datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


def parse(raw: bytes) -> object:
    """Strict JSON (UTF-8, no NaN), numbers with a fraction as Decimal, so `2.0` is no integer."""
    def refuse(name: str) -> None:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(raw.decode("utf-8"), parse_float=Decimal, parse_constant=refuse)


def judge(raw: bytes) -> set[tuple[str, str]]:
    rec = parse(raw)
    assert isinstance(rec, dict)
    return Judge().message(rec)


def category(rule: str) -> str:
    for suffix in ("required", "not_nullable", "out_of_range"):
        if rule.endswith("." + suffix):
            return suffix
    return "type" if re.search(r"\.type\([a-z]+\)$", rule) else "check"


# ---------------------------------------------------------------- the rules of the contract


def contract_rules() -> set[str]:
    """Every rule the contract can give, by path pattern: structural ones and each check's id."""
    from contracts.order_events import OrderEvents
    from foodtaster.contract.model import rule_id

    def json_type(column) -> str:
        text = str(column.dtype).lower()
        if (column.metadata or {}).get("object"):
            return "object"
        if (column.metadata or {}).get("items"):
            return "array"
        for prefix, name in (("string", "string"), ("int", "integer"), ("decimal", "number"),
                             ("date", "date")):
            if text.startswith(prefix):
                return name
        raise AssertionError(f"no JSON type for {column.dtype}")

    def field(path: str, column) -> set[str]:
        kind = json_type(column)
        found = {f"{path}.required", f"{path}.not_nullable", f"{path}.type({kind})"}
        if kind in ("number", "integer"):
            found.add(f"{path}.out_of_range")
        return found | {rule_id(path, c.name, c.statistics) for c in column.checks}

    rules: set[str] = set()
    aliases = OrderEvents.to_schema().columns
    for alias, column in aliases.items():
        rules |= field(alias, column)
        parts = alias.split(".")
        rules |= {".".join(parts[:i]) + ".type(object)" for i in range(1, len(parts))}
        items = (column.metadata or {}).get("items")
        if items is None:
            continue
        elements = items.to_schema().columns
        if list(elements) == ["value"]:  # an array of scalars: the element is the value
            rules |= field(f"{alias}[]", elements["value"])
        else:
            rules |= {f"{alias}[].not_nullable", f"{alias}[].type(object)"}
            for name, element in elements.items():
                rules |= field(f"{alias}[].{name}", element)
    return rules


# ---------------------------------------------------------------- fixtures


def read_lines(path: str) -> list[bytes]:
    data = Path(path).read_bytes()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    assert data.endswith(b"\n"), "every line, the last too, ends with \\n"
    return data.split(b"\n")[:-1]


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> SampleBatch:
    return generate_events(tmp_path_factory.mktemp("events"), messages=4000, seed=11,
                           poison_rate=0.1, files=3, gzip_files=1)


@pytest.fixture(scope="module")
def rows(batch: SampleBatch) -> list[tuple[EventTruth, bytes]]:
    by_name = {Path(p).name: read_lines(p) for p in batch.files}
    return [(t, by_name[t.file][t.line - 1]) for t in batch.truth]


def of_kind(rows: list[tuple[EventTruth, bytes]], kind: str) -> list[tuple[EventTruth, bytes]]:
    found = [(t, raw) for t, raw in rows if t.kind == kind]
    assert found, f"no {kind} line"
    return found


# ---------------------------------------------------------------- the batch


def test_same_arguments_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    def write(name: str, seed: int) -> list[bytes]:
        made = generate_events(tmp_path / name, messages=500, seed=seed, files=2, gzip_files=1)
        return [Path(p).read_bytes() for p in made.files]

    first = write("a", 3)
    assert write("b", 3) == first  # the gzip file too: no mtime or name in its header
    assert write("c", 4) != first


def test_every_kind_appears(batch: SampleBatch, tmp_path: Path) -> None:
    assert set(Counter(t.kind for t in batch.truth)) == {"good", *POISON_KINDS}
    smallest = generate_events(tmp_path, messages=4 * len(POISON_KINDS), poison_rate=0.0, seed=1)
    assert {t.kind for t in smallest.truth} == {"good", *POISON_KINDS}


def test_only_the_requested_kinds(tmp_path: Path) -> None:
    kinds = ["multi_element", "redelivery", "too_deep"]
    made = generate_events(tmp_path, messages=100, kinds=kinds, poison_rate=0.3)
    found = Counter(t.kind for t in made.truth)
    assert set(found) == {"good", *kinds} and sum(found[k] for k in kinds) == 30


def test_counts_add_up(batch: SampleBatch) -> None:
    assert len(batch.truth) == batch.messages == 4000
    per_file = defaultdict(list)
    for t in batch.truth:
        per_file[t.file].append(t.line)
    assert sorted(per_file) == sorted(Path(p).name for p in batch.files)
    for path in batch.files:
        assert per_file[Path(path).name] == list(range(1, len(read_lines(path)) + 1))
    counts = batch.counts()
    assert counts["valid"] + counts["quarantined"] + counts["duplicate_dropped"] == batch.messages
    assert Counter(counts) == Counter(t.expected for t in batch.truth)
    assert 0.09 * batch.messages <= batch.messages - counts["valid"] <= 0.11 * batch.messages
    for t in batch.truth:
        expected = {"good": "valid", "redelivery": "duplicate_dropped"}.get(t.kind, "quarantined")
        assert t.expected == expected, t
        assert bool(t.reasons) == (expected == "quarantined"), t


def test_files_are_named_for_the_dataset(batch: SampleBatch) -> None:
    names = [Path(p).name for p in batch.files]
    assert names == ["order_events-2026-11-20-part-0000.jsonl",
                     "order_events-2026-11-20-part-0001.jsonl",
                     "order_events-2026-11-20-part-0002.jsonl.gz"]


# ---------------------------------------------------------------- good lines


def test_good_lines_satisfy_the_contract(rows: list[tuple[EventTruth, bytes]]) -> None:
    good = [raw for t, raw in rows if t.kind == "good"]
    failing = [(raw, judge(raw)) for raw in good if judge(raw)]
    assert not failing, failing[:3]
    records = [json.loads(raw) for raw in good]
    assert len({r["id"] for r in records}) == len(records)


def test_one_order_a_message(rows: list[tuple[EventTruth, bytes]]) -> None:
    orders = []
    for t, raw in rows:
        if t.kind in ("redelivery", *BYTES_AND_PARSE):
            continue
        rec = json.loads(raw)
        order = rec["data"].get("order_id") if isinstance(rec.get("data"), dict) else None
        orders.append(order if isinstance(order, str) else t)  # a poison order_id is its own
    assert len(set(orders)) == len(orders)


def test_good_lines_vary_as_producers_do(rows: list[tuple[EventTruth, bytes]]) -> None:
    good = [raw for t, raw in rows if t.kind == "good"]
    records = [json.loads(raw) for raw in good]
    customers = [r["data"]["customer"] for r in records]
    assert {type(c.get("address", MISSING)) for c in customers} == {dict, type(None), object}
    assert {"tags" in r["data"] for r in records} == {True, False}
    assert any(r["data"]["delivery_date"] is None for r in records)
    assert any("datacontenttype" in r for r in records)
    assert any("loyalty" in c for c in customers)
    assert any("discount" in line for r in records for line in r["data"]["lines"])
    assert any(set(r["data"]) - {"order_id", "customer", "lines", "tags", "total", "delivery_date"}
               for r in records)
    assert {len(r["data"]["lines"]) for r in records} == set(range(1, 7))
    prices = [m.group(1) for raw in good for m in re.finditer(rb'"price":\s*([0-9.]+)', raw)]
    assert {b"." in p for p in prices} == {True, False}  # integer literals and decimals
    assert {len(p.partition(b".")[2]) for p in prices} == {0, 1, 2}
    starts = Counter(raw[:8] for raw in good)
    assert set(starts) == {b'{"specve', b'{"id": "'}  # two producers, two key orders and spacings
    assert {r["source"] for r in records} == {"/shop/checkout", "/shop/fulfilment"}


def test_good_lines_pass_the_gate(rows: list[tuple[EventTruth, bytes]]) -> None:
    records = [json.loads(raw, parse_float=Decimal) for t, raw in rows if t.kind == "good"]
    totals = sorted(r["data"]["total"] for r in records)
    assert 1 <= totals[len(totals) // 2] <= 10_000
    for r in records:
        lines = r["data"]["lines"]
        assert sum(line["qty"] * Decimal(line["price"]) for line in lines) == r["data"]["total"]
    days = Counter(
        datetime.fromisoformat(r["time"].replace("Z", "+00:00")).astimezone(UTC).date().isoformat()
        for r in records)
    assert days["2026-11-20"] >= 0.95 * len(records)


# ---------------------------------------------------------------- poison lines


def test_contract_poison_fails_exactly_where_its_reasons_say(
    rows: list[tuple[EventTruth, bytes]],
) -> None:
    for kind in set(POISON_KINDS) - set(BYTES_AND_PARSE) - {"redelivery"}:
        for t, raw in of_kind(rows, kind):
            claimed = {(category(rule), column) for rule, column in t.reasons}
            assert judge(raw) == claimed, (kind, raw)
            assert len(claimed) == len(t.reasons), t  # one reason a failing column


def test_reasons_name_rules_and_paths_of_the_contract(rows: list[tuple[EventTruth, bytes]]) -> None:
    rules = contract_rules()
    for t, _ in rows:
        for rule, column in t.reasons:
            if t.kind in BYTES_AND_PARSE:
                assert (rule, column) == (BYTES_AND_PARSE[t.kind], None), t
                continue
            assert rule in rules, (rule, t)
            pattern = re.sub(r"\[\d+\]", "[]", column)  # data.lines[2].qty -> data.lines[].qty
            assert rule.startswith(pattern + ".") and "[]" not in rule[len(pattern):], (rule, column)


def test_the_rule_ids_are_the_engines() -> None:
    from foodtaster.contract.model import rule_id

    assert rule_id("data.lines[].qty", "greater_than_or_equal_to", {"min_value": 1}) == \
        "data.lines[].qty.greater_than_or_equal_to(1)"
    rules = contract_rules()
    assert {"specversion.isin", "data.customer.email.str_matches", "data.tags.less_than_or_equal_to(10)",
            "data.lines.greater_than_or_equal_to(1)", "data.tags[].str_length(min_value=1,max_value=32)",
            "data.lines[].price.greater_than_or_equal_to(0)", "source.str_startswith(/shop/)",
            "data.customer.type(object)", "data.lines[].type(object)"} <= rules


def test_bytes_and_parse_poison(rows: list[tuple[EventTruth, bytes]]) -> None:
    for _, raw in of_kind(rows, "invalid_utf8"):
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")
        json.loads(raw.decode("utf-8", "surrogateescape"))  # the bytes are its only fault
    for _, raw in of_kind(rows, "truncated_json"):
        assert raw.startswith(b"{")
        with pytest.raises(ValueError):
            parse(raw)
    deep = b"[" * 1001 + b"]" * 1001
    for _, raw in of_kind(rows, "too_deep"):
        assert raw.count(deep) == 1 and b"[" * 1002 not in raw
        assert not judge(raw.replace(deep, b"[]"))  # the depth is its only fault


def test_multi_element_reasons_have_distinct_indices(rows: list[tuple[EventTruth, bytes]]) -> None:
    for t, _ in of_kind(rows, "multi_element"):
        indices = {re.search(r"data\.lines\[(\d+)\]", column).group(1) for _, column in t.reasons}
        assert len(t.reasons) == 2 and len(indices) == 2, t


def test_redelivery_is_a_byte_identical_copy_of_an_earlier_good_line(
    rows: list[tuple[EventTruth, bytes]],
) -> None:
    seen_good: set[bytes] = set()
    for t, raw in sorted(rows, key=lambda row: (row[0].file, row[0].line)):
        if t.kind == "redelivery":
            assert raw in seen_good and t.expected == "duplicate_dropped" and not t.reasons
        elif t.kind == "good":
            seen_good.add(raw)
    assert of_kind(rows, "redelivery")


# ---------------------------------------------------------------- scale, CLI, suite


def test_a_large_batch_without_truth(tmp_path: Path) -> None:
    made = generate_events(tmp_path, messages=200_000, keep_truth=False)
    assert made.truth == []
    counts = made.counts()
    assert sum(counts.values()) == 200_000 and counts["quarantined"] > 0
    assert sum(len(read_lines(p)) for p in made.files) == 200_000


def test_without_truth_the_bytes_and_counts_stay(tmp_path: Path) -> None:
    lean = generate_events(tmp_path / "lean", messages=400, keep_truth=False)
    full = generate_events(tmp_path / "full", messages=400)
    assert lean.counts() == full.counts()
    assert [Path(p).read_bytes() for p in lean.files] == [Path(p).read_bytes() for p in full.files]


@pytest.mark.parametrize("bad", [
    {"kinds": ["nope"]}, {"files": 0}, {"messages": 2, "files": 3}, {"gzip_files": 3},
    {"poison_rate": 1.5}, {"batch_date": "2026-13-01"},
])
def test_bad_arguments_are_refused(tmp_path: Path, bad: dict) -> None:
    with pytest.raises(ValueError):
        generate_events(tmp_path, **bad)


def test_cli_writes_order_events_and_their_reasons(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    truth = tmp_path / "truth.jsonl"
    argv = ["generate-sample", "--dataset", "order_events", "--out", str(tmp_path / "out"),
            "--messages", "300", "--seed", "5", "--poison-rate", "0.2", "--files", "2",
            "--truth", str(truth)]
    assert main(argv) == 0
    assert "wrote 300 order_events lines in 2 files" in capsys.readouterr().out
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    assert len(records) == 300
    assert set(records[0]) == {"file", "line", "kind", "expected", "reasons"}
    assert any(r["reasons"] and r["reasons"][0][0].startswith("data.") for r in records)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "order_events-2026-11-20-part-0000.jsonl", "order_events-2026-11-20-part-0001.jsonl.gz"]


def test_cli_orders_by_default_as_before(tmp_path: Path) -> None:
    def run(out: Path, *extra: str) -> list[bytes]:
        assert main(["generate-sample", "--out", str(out), "--messages", "200", *extra]) == 0
        return [p.read_bytes() for p in sorted(out.iterdir())]

    default = run(tmp_path / "a")
    assert run(tmp_path / "b", "--dataset", "orders") == default
    assert sorted(p.name for p in (tmp_path / "a").iterdir())[0].startswith("orders-")


def test_importable_without_spark_or_pandas() -> None:
    code = ("import sys, foodtaster_dev.sample_events; "
            "assert not {'pyspark', 'pandas', 'pandera'} & set(sys.modules), sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_dataset_and_its_gate_suite() -> None:
    from contracts.order_events import OrderEvents
    from foodtaster.engine.gate.gate import batch_parameters, load_suite, suite_columns
    from foodtaster.registry import get_dataset

    config = get_dataset("order_events")
    assert config.load_contract() is OrderEvents
    assert (config.group_by, config.order_by) == ("data.order_id", "time")
    assert (config.alert_rate, config.hold_rate, config.schedule) == (0.02, 0.20, "@daily")
    suite = load_suite(config.suite_path())
    assert set(suite_columns(suite)) <= set(OrderEvents.to_schema().columns)
    parameters = [v["$PARAMETER"] for e in suite["expectations"] for v in e["kwargs"].values()
                  if isinstance(v, dict) and "$PARAMETER" in v]
    assert parameters and set(parameters) <= set(batch_parameters("2026-11-20"))
