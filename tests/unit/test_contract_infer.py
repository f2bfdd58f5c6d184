"""`foodtaster contract infer`: a first JSON Schema from sample messages. Drawn from the three
bundled generators' clean messages, it passes every one of them and quarantines the poison
kinds a schema of types, required keys and closed sets can see; what it cannot tell is said."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest

from foodtaster.contract.infer import infer
from foodtaster.ops.cli import main
from foodtaster_dev.sample import generate_batch
from foodtaster_dev.sample_events import generate_events
from foodtaster_dev.sample_payments import generate_payments

# The poison kinds of each generator a schema inferred from clean messages must catch: a key
# missing or null, a value of another type, a string outside a closed set.
SEEN = {
    "orders": (generate_batch, {"missing_field", "null_required", "wrong_type_amount", "unknown_enum",
                                "multi_fail"}),
    "order_events": (generate_events, {"data_missing", "data_null", "data_not_object", "missing_nested_field",
                                       "null_nested_field", "lines_not_array", "element_not_object",
                                       "null_element", "element_missing_sku", "customer_not_object"}),
    "payment_events": (generate_payments, {"missing_required", "null_not_allowed", "wrong_type",
                                           "unknown_enum", "wrong_const"}),
}


def sample(generate, folder, kinds):
    batch = generate(folder, messages=400, poison_rate=0.2, files=1, gzip_files=0, kinds=sorted(kinds))
    (file,) = batch.files
    lines = Path(file).read_bytes().split(b"\n")
    return [(t.kind, lines[t.line - 1]) for t in batch.truth]


@pytest.mark.parametrize("dataset", sorted(SEEN))
def test_a_schema_from_clean_messages_passes_them_and_quarantines_the_poison_it_can_see(tmp_path, dataset):
    generate, must_catch = SEEN[dataset]
    lines = sample(generate, tmp_path, must_catch)
    clean = [line for kind, line in lines if kind == "good"]
    inferred = infer(clean, title=dataset)
    assert inferred.messages == len(clean) and "additionalProperties" not in json.dumps(inferred.schema)
    validator = jsonschema_rs.validator_for(inferred.schema)
    assert all(validator.is_valid(json.loads(line)) for line in clean)
    caught = set()
    for kind, line in lines:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if kind in must_catch and not validator.is_valid(message):
            caught.add(kind)
    assert caught == must_catch


def test_what_the_sample_cannot_tell_is_said_and_the_cli_writes_the_schema(tmp_path, capsys):
    rows = [{"id": f"a{i}", "at": "2026-11-20T10:00:00Z", "tags": [], "note": None,
             "kind": ["x", "y"][i % 2], "n": i if i % 3 else i + 0.5, **({"extra": 1} if i == 1 else {})}
            for i in range(40)]
    file = tmp_path / "day.jsonl"
    file.write_text("\n".join(map(json.dumps, rows)) + "\n[1]\nnot json\n")
    assert main(["contract", "infer", str(file), "--title", "Things", "--out", str(tmp_path / "s.json")]) == 0
    schema = json.loads((tmp_path / "s.json").read_text())
    assert schema["title"] == "Things" and schema["$schema"].endswith("2020-12/schema")
    assert schema["required"] == ["id", "at", "tags", "note", "kind", "n"]  # extra: seen once
    props = schema["properties"]
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["kind"] == {"type": "string", "enum": ["x", "y"]}
    assert props["n"] == {"type": "number"} and props["note"] == {} and props["tags"] == {"type": "array"}
    said = capsys.readouterr().err
    for words in ("inferred from 40 messages", "1 line(s) not JSON", "1 line(s) not a JSON object",
                  "note: only null seen", "tags: every array seen was empty",
                  "kind: an enum of the 2 values"):
        assert words in said
