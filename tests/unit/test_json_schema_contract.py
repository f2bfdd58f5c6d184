"""Reading a JSON Schema contract (`foodtaster.contract.json_schema`), without Spark: its draft,
its references, its typed view, and every refusal, each naming the keyword and its pointer."""

from __future__ import annotations

import json
import textwrap

import pytest

from foodtaster.contract.json_schema import read_json_schema
from foodtaster.contract.model import ContractError, JsonType
from foodtaster.engine.judging.schema_judge import judge_message
from foodtaster.registry import RegistryError, load_registry

DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def write(tmp_path, schema, name="event.schema.json"):
    path = tmp_path / name
    path.write_text(json.dumps(schema))
    return path


def reasons(contract, message):
    found = judge_message(contract.schema.validator(), json.dumps(message))
    return None if found is None else {(rule, column) for _, rule, column, _, _ in found}


def test_the_typed_view_types_what_has_one_type_and_keeps_the_rest_as_json_text(tmp_path):
    contract = read_json_schema(write(tmp_path, {
        "$schema": DRAFT_2020, "title": "Event", "type": "object",
        "properties": {
            "id": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": ["number", "null"]},
            "ts": {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}]},
            "app.name": {"type": "string"},
            "data": {"type": "object", "properties": {
                "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "any": {}}},
        },
        "$defs": {"line": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": -1e20}}}},
    }))
    assert contract.name == "Event" and contract.judged_by_schema
    assert [(f.name, f.json_type.name) for f in contract.fields] == [
        ("id", "string"), ("count", "integer"), ("ratio", "number"), ("ts", "json"),
        ('["app.name"]', "string"), ("data", "object"), ("data.lines", "array"), ("data.tags", "array"),
        ("data.any", "json")]
    lines = contract.slot("data.lines").items
    # an integer is a long, unless the schema's bounds pass 64 bits: then decimal(38,0)
    assert [(f.name, f.json_type) for f in lines.fields] == [("qty", JsonType("decimal", 38, 0))]
    assert contract.slot("data.tags").items.scalar


def test_the_draft_is_the_one_schema_names(tmp_path):
    draft7 = read_json_schema(write(tmp_path, {"$schema": "http://json-schema.org/draft-07/schema#"}))
    assert draft7.schema.draft == "draft-07"
    assert read_json_schema(write(tmp_path, {"type": "object"})).schema.draft == "2020-12"
    with pytest.raises(ContractError, match="is no draft Foodtaster judges"):
        read_json_schema(write(tmp_path, {"$schema": "https://example.com/my-meta"}))


def test_a_remote_reference_is_refused_with_its_keyword_and_pointer(tmp_path):
    path = write(tmp_path, {"properties": {"a": {"$ref": "https://example.com/schemas/x.json"}}})
    with pytest.raises(ContractError) as error:
        read_json_schema(path)
    words = str(error.value)
    assert "$ref 'https://example.com/schemas/x.json' at #/properties/a" in words
    assert "remote references are not fetched" in words


def test_local_references_anchors_and_files_beside_the_schema_are_followed(tmp_path):
    (tmp_path / "address.json").write_text(json.dumps(
        {"$defs": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}))
    contract = read_json_schema(write(tmp_path, {
        "$schema": DRAFT_2020, "$id": "https://shop.example/schemas/event.json",
        "properties": {"zip": {"$ref": "address.json#/$defs/zip"}, "code": {"$ref": "#code"}},
        "$defs": {"code": {"$anchor": "code", "enum": ["A", "B"]}}}))
    assert reasons(contract, {"zip": "12345", "code": "A"}) is None
    assert reasons(contract, {"zip": "1234x", "code": "C"}) == {("zip.pattern", "zip"), ("code.enum", "code")}


def test_formats_are_annotations_unless_the_dataset_asks(tmp_path):
    path = write(tmp_path, {"properties": {"email": {"format": "email"}, "day": {"format": "date"}}})
    bad = {"email": "nope", "day": "2026-02-30"}
    assert reasons(read_json_schema(path), bad) is None
    asserted = read_json_schema(path, assert_formats=("email",))
    assert reasons(asserted, bad) == {("email.format(email)", "email")}
    with pytest.raises(ContractError, match="assert_formats names 'hostname'"):
        read_json_schema(path, assert_formats=("hostname",))


def test_an_ignored_keyword_is_not_judged_and_is_said(tmp_path):
    path = write(tmp_path, {"properties": {"n": {"minimum": 3, "unevaluatedProperties": False}}})
    contract = read_json_schema(path, ignore=("#/properties/n/minimum",))
    assert contract.schema.ignored == ("#/properties/n/minimum",)
    assert reasons(contract, {"n": 1}) is None
    with pytest.raises(ContractError, match="ignore names '#/properties/m/minimum', which is no keyword"):
        read_json_schema(path, ignore=("#/properties/m/minimum",))


def test_what_the_validator_cannot_compile_and_what_is_no_json_are_refused(tmp_path):
    with pytest.raises(ContractError, match="cannot be compiled"):
        read_json_schema(write(tmp_path, {"properties": {"a": {"pattern": "(unclosed"}}}))
    broken = tmp_path / "broken.json"
    broken.write_text("{'single': 'quotes'}")
    with pytest.raises(ContractError, match="is not JSON"):
        read_json_schema(broken)


def test_reasons_name_the_failing_value_by_path_and_the_rule_by_keyword(tmp_path):
    contract = read_json_schema(write(tmp_path, {
        "type": "object", "required": ["id"], "additionalProperties": False,
        "properties": {"id": {"type": "string"}, "lines": {"type": "array", "maxItems": 2, "items": {
            "type": "object", "required": ["qty"], "properties": {"qty": {"type": "integer", "minimum": 1}}}},
            "ts": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}))
    assert reasons(contract, {"id": "x", "lines": [{"qty": 1.0}], "ts": 5}) is None  # 1.0 is an integer
    assert reasons(contract, {"lines": [{"qty": 0}, {}, {"qty": 1}], "ts": True, "a.b": 1}) == {
        ("id.required", "id"), ("additionalProperties", '["a.b"]'), ("lines.maxItems(2)", "lines"),
        ("lines[].qty.minimum(1)", "lines[0].qty"), ("lines[].qty.required", "lines[1].qty"),
        ("ts.oneOf", "ts")}


def test_the_registry_reads_a_schema_beside_it_and_refuses_schema_options_on_a_model(tmp_path):
    write(tmp_path, {"type": "object", "properties": {"id": {"type": "string"}}})
    registry = tmp_path / "pipeline.yaml"
    registry.write_text(textwrap.dedent("""
        datasets:
          events:
            contract: event.schema.json
            expectation_suite: expectations/orders.json
            assert_formats: [email]
          orders:
            contract: contracts.orders:Orders
            expectation_suite: expectations/orders.json
    """))
    config = load_registry(registry)["events"]
    assert config.schema_file == tmp_path / "event.schema.json" and config.load_contract() is None
    assert config.read_contract().schema.assert_formats == ("email",)
    registry.write_text(registry.read_text().replace("Orders\n", "Orders\n    ignore: ['#/x']\n"))
    with pytest.raises(RegistryError, match="ignore and assert_formats are a JSON Schema contract's"):
        load_registry(registry)


def test_the_land_task_refuses_a_contract_it_cannot_read_before_anything_lands(tmp_path, monkeypatch):
    from foodtaster_airflow import steps

    write(tmp_path, {"properties": {"a": {"$ref": "https://example.com/remote.json"}}})
    registry = tmp_path / "pipeline.yaml"
    registry.write_text("datasets:\n  events:\n    contract: event.schema.json\n"
                        "    expectation_suite: expectations/orders.json\n")
    lake = tmp_path / "lake"
    (lake / "inbox" / "events" / "dt=2026-11-20").mkdir(parents=True)
    (lake / "inbox" / "events" / "dt=2026-11-20" / "a.jsonl").write_text('{"a": 1}\n')
    monkeypatch.setenv("FOODTASTER_REGISTRY", str(registry))
    monkeypatch.setenv("FOODTASTER_LAKE", str(lake))
    with pytest.raises(ContractError, match="remote references are not fetched"):
        steps.land("events", "2026-11-20", None, None)
    assert not (lake / "raw").exists()


def test_what_published_schemas_tripped_on_reads_and_judges(tmp_path):
    """A recursive definition (its recursive part kept as JSON text), a `$ref` to the standard's
    own meta-schema, a local `$ref` under a URN `$id`, a percent-encoded pointer."""
    tree = read_json_schema(write(tmp_path, {
        "$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}}))
    assert [(f.name, f.json_type.name) for f in tree.fields] == [("name", "string"), ("kids", "array")]
    assert tree.slot("kids").items.fields[0].json_type.name == "json"
    assert reasons(tree, {"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}]}) is None
    assert reasons(tree, {"name": "a", "kids": [{"kids": []}]}) == {("kids[].name.required", "kids[0].name")}
    meta = read_json_schema(write(tmp_path, {"type": "object", "properties": {
        "schema": {"$ref": DRAFT_2020}}}))
    assert reasons(meta, {"schema": {"type": "string"}}) is None
    assert reasons(meta, {"schema": {"type": 5}}) is not None
    for urn in ("urn:uuid:deadbeef-1234-5678-9abc-def012345678", "urn:example:foo"):
        under = read_json_schema(write(tmp_path, {"$id": urn, "type": "object", "properties": {
            "b": {"$ref": "#/$defs/a%20b"}}, "$defs": {"a b": {"type": "string"}}}))
        assert [(f.name, f.json_type.name) for f in under.fields] == [("b", "string")]
        assert reasons(under, {"b": 1}) == {("b.type(string)", "b")}


def test_a_ref_that_is_no_uri_reference_is_refused_naming_it_and_its_pointer(tmp_path):
    words = r"\$ref '#/\$defs/a b' at #/properties/a is no valid URI reference: ' ' at index 9; percent"
    with pytest.raises(ContractError, match=words):
        read_json_schema(write(tmp_path, {"properties": {"a": {"$ref": "#/$defs/a b"}},
                                          "$defs": {"a b": {"type": "string"}}}))
