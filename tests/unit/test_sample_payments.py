"""The payment_events generator writes what its truth says, judged by the reference validator:
`jsonschema` on `contracts/payment_events.schema.json` (draft 2020-12, the formats the dataset
asserts checked strictly) passes every good line, and gives every poison line exactly the
reasons its truth lists, each error named by the rule naming `sample_payments` writes down.
So the truth is the spec's verdict, not the generator's own idea of it."""

from __future__ import annotations

import ast
import gzip
import json
import re
from collections import Counter
from datetime import date
from pathlib import Path as FilePath

import jsonschema
import pytest
import yaml

from foodtaster.contract import read_contract
from foodtaster.contract.path import Path
from foodtaster.contract.to_pandera import pandera_module
from foodtaster_dev.cli import main
from foodtaster_dev.sample_events import EventTruth
from foodtaster_dev.sample_payments import ASSERT_FORMATS, DATASET, POISON_KINDS, SCHEMA, generate_payments

LINE_RULES = {"invalid_utf8": "line.not_utf8", "nul_byte": "line.nul_byte", "truncated_json": "json.invalid",
              "nan": "json.invalid", "top_level_array": "json.not_object"}
RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))")
URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*")


def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    found = RFC3339.fullmatch(value)
    if not found:
        return False
    year, month, day, hour, minute, second = (int(found.group(i)) for i in range(1, 7))
    try:
        date(year, month, day)
    except ValueError:
        return False
    return hour < 24 and minute < 60 and second < 61


def validator() -> jsonschema.Draft202012Validator:
    checker = jsonschema.FormatChecker(formats=())
    checker.checks("date-time")(_date_time)
    checker.checks("uri")(lambda v: not isinstance(v, str) or bool(URI.fullmatch(v)))
    checker.checks("email")(lambda v: not isinstance(v, str) or "@" in v)
    assert set(checker.checkers) == set(ASSERT_FORMATS)
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=checker)


def reasons_of(errors: list[jsonschema.ValidationError]) -> set[tuple[str, str]]:
    """jsonschema's errors as the (rule, column) pairs the naming in sample_payments gives."""
    found = set()
    for error in errors:
        at = Path(tuple(error.absolute_path))
        if error.validator == "required":
            missing = ast.literal_eval(error.message.removesuffix(" is a required property"))
            found.add((f"{at.key(missing).pattern}.required", str(at.key(missing))))
        elif error.validator == "additionalProperties":
            for key in set(error.instance) - set(error.schema.get("properties", {})):
                found.add((f"{at.pattern}.additionalProperties", str(at.key(key))))
        else:
            value = error.validator_value
            argument = "" if error.validator in ("enum", "const", "pattern", "oneOf", "anyOf") else \
                f"({','.join(value) if isinstance(value, list) else value})"
            found.add((f"{at.pattern}.{error.validator}{argument}", str(at)))
    return found


def read(batch) -> list[tuple[EventTruth, bytes]]:
    lines: list[bytes] = []
    for path in batch.files:
        data = FilePath(path).read_bytes()
        lines += (gzip.decompress(data) if path.endswith(".gz") else data).splitlines()
    assert len(lines) == len(batch.truth) == batch.messages
    return list(zip(batch.truth, lines, strict=True))


def _no_constants(name: str) -> None:
    raise ValueError(name)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    return generate_payments(tmp_path_factory.mktemp("payments"), messages=1500, seed=11, poison_rate=0.2,
                             files=3, gzip_files=1)


def test_every_line_gets_what_the_reference_validator_says(batch):
    judge = validator()
    checked = Counter()
    for truth, line in read(batch):
        if truth.kind in LINE_RULES:
            assert truth.reasons == {(LINE_RULES[truth.kind], None)}
            assert (b"\x00" in line) == (truth.kind == "nul_byte")
            try:
                message = json.loads(line.decode("utf-8"), parse_constant=_no_constants)
            except (UnicodeDecodeError, ValueError):
                checked["unreadable"] += 1
                continue
            assert truth.kind == "top_level_array" and isinstance(message, list)
            continue
        message = json.loads(line)
        assert reasons_of(list(judge.iter_errors(message))) == set(truth.reasons), (truth, line[:300])
        assert (truth.expected == "valid") == (not truth.reasons)
        checked[truth.kind] += 1
    assert checked["good"] > 1000 and set(checked) >= set(POISON_KINDS) - set(LINE_RULES)


def test_every_kind_every_form_and_the_edges(batch):
    kinds = Counter(t.kind for t in batch.truth)
    assert set(kinds) == {"good", *POISON_KINDS}
    rules = {rule for t in batch.truth for rule, _ in t.reasons}
    for expected in ("data.object.refunds.data[].amount.exclusiveMinimum(0)", "created.oneOf",
                     "data.object.shipping.oneOf", "request.oneOf", "type.enum", "object.const",
                     "data.object.billing_details.address.additionalProperties", "id.required",
                     "data.object.receipt_url.format(uri)", "data.object.refunds.data.maxItems(10)",
                     "data.object.customer.type(string,null)", "data.object.metadata.maxProperties(20)"):
        assert expected in rules, expected
    columns = {column for t in batch.truth for _, column in t.reasons}
    assert 'data.object.billing_details.address["apt.no"]' in columns  # a key holding a dot, quoted
    good = [json.loads(line) for truth, line in read(batch) if truth.kind == "good"]
    stamps = Counter(type(m["created"]).__name__ for m in good)
    assert set(stamps) == {"int", "float", "str"}  # 1764000000.0 is an integer to the schema
    charges = [m["data"]["object"] for m in good]
    assert any(c.get("shipping") is None and "shipping" in c for c in charges)
    assert any("request" not in m for m in good) and any(m.get("request") is None for m in good)


def test_counts_files_and_same_bytes(tmp_path, batch):
    assert sum(batch.counts().values()) == batch.messages == 1500
    assert batch.counts()["quarantined"] == sum(t.expected == "quarantined" for t in batch.truth)
    assert [FilePath(f).name for f in batch.files] == [
        f"{DATASET}-2026-11-20-part-0000.jsonl", f"{DATASET}-2026-11-20-part-0001.jsonl",
        f"{DATASET}-2026-11-20-part-0002.jsonl.gz"]
    one = generate_payments(tmp_path / "a", messages=200, seed=5)
    two = generate_payments(tmp_path / "b", messages=200, seed=5)
    other = generate_payments(tmp_path / "c", messages=200, seed=6)
    assert [FilePath(f).read_bytes() for f in one.files] == [FilePath(f).read_bytes() for f in two.files]
    assert [FilePath(f).read_bytes() for f in one.files] != [FilePath(f).read_bytes() for f in other.files]
    only = generate_payments(tmp_path / "d", messages=100, seed=5, kinds=["bad_timestamp"])
    assert {t.kind for t in only.truth} == {"good", "bad_timestamp"}
    with pytest.raises(ValueError, match="unknown poison kinds"):
        generate_payments(tmp_path / "e", kinds=["nope"])


def test_the_registry_entry_asserts_the_formats_the_truth_assumes():
    entry = yaml.safe_load((SCHEMA.parent.parent / "pipeline.yaml").read_text())["datasets"][DATASET]
    assert entry["contract"] == f"contracts/{DATASET}.schema.json"
    assert sorted(entry["assert_formats"]) == sorted(ASSERT_FORMATS)
    suite = json.loads((SCHEMA.parent.parent / entry["expectation_suite"]).read_text())
    assert suite["name"] == DATASET


def test_the_schema_imports_as_pandera():
    text = pandera_module(SCHEMA)
    assert "# not carried over: oneOf at #/$defs/timestamp/oneOf" in text
    namespace: dict = {"__name__": "payment_events_pandera"}
    exec(compile(text, "<imported>", "exec", dont_inherit=True), namespace)  # noqa: S102
    contract = read_contract(namespace["ChargeWebhookEvent"])
    refund = contract.slot("data.object.refunds.data").items
    assert refund is not None and [f.name for f in refund.fields] == ["id", "amount", "status", "reason"]
    assert contract.slot("data.object.shipping").nullable
    assert contract.slot("object").json_type.name == "string"  # the field `f_object`, aliased


def test_the_command_writes_a_day_and_its_truth(tmp_path, capsys):
    out = tmp_path / "inbox" / DATASET / "dt=2026-11-21"
    assert main(["generate-sample", "--dataset", DATASET, "--out", str(out), "--date", "2026-11-21",
                 "--messages", "120", "--truth", str(tmp_path / "truth.jsonl")]) == 0
    assert f"wrote 120 {DATASET} lines in 3 files" in capsys.readouterr().out
    truth = [json.loads(line) for line in (tmp_path / "truth.jsonl").read_text().splitlines()]
    assert len(truth) == 120 and any(t["reasons"] for t in truth)
