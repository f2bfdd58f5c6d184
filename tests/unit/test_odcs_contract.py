"""Reading an ODCS data contract (`foodtaster.contract.odcs`), without Spark: its properties at
every depth, its keys, classification, quality rules as row rules or gate expectations, what it
passes over, and every refusal by name."""

from __future__ import annotations

import textwrap
from datetime import date

import pytest

from foodtaster.contract.describe import describe
from foodtaster.contract.documents import read_document
from foodtaster.contract.model import Check, ContractError
from foodtaster.contract.path import Path
from foodtaster.engine.judging.judging import unique_key
from foodtaster.registry import load_registry

HEAD = """\
apiVersion: v3.1.0
kind: DataContract
id: 3b1c1f0e-0000-4000-8000-000000000001
version: 1.0.0
status: active
"""


def write(tmp_path, body: str, name: str = "c.odcs.yaml"):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return path


SHIPMENT = """\
servers:
  - server: prod
    type: kafka
    host: broker:9092
slaProperties:
  - property: latency
    value: 4
    unit: d
team:
  name: logistics
schema:
  - name: shipments
    physicalType: topic
    quality:
      - name: enough_shipments
        metric: rowCount
        mustBeGreaterThan: 10
      - name: one_line_a_parcel
        metric: duplicateValues
        mustBe: 0
        arguments: {properties: [carrier, tracking_no]}
    properties:
      - name: carrier
        logicalType: string
        primaryKey: true
        primaryKeyPosition: 1
        enum: [{value: DHL}, {value: UPS}]
      - name: tracking_no
        logicalType: string
        primaryKey: true
        primaryKeyPosition: 2
        logicalTypeOptions: {pattern: "^[A-Z0-9]{8,20}$"}
      - name: shipped_at
        logicalType: timestamp
        required: true
      - name: due
        logicalType: date
        logicalTypeOptions: {minimum: "2020-01-01"}
      - name: recipient
        logicalType: object
        required: true
        classification: restricted
        properties:
          - name: name
            logicalType: string
            required: true
          - name: zip
            logicalType: string
            quality:
              - metric: invalidValues
                arguments: {pattern: "^[0-9]{5}$"}
                mustBe: 0
      - name: parcels
        logicalType: array
        logicalTypeOptions: {minItems: 1, maxItems: 20}
        items:
          logicalType: object
          properties:
            - name: weight_g
              logicalType: integer
              required: true
              logicalTypeOptions: {exclusiveMinimum: 0, multipleOf: 10, format: i32}
            - name: fragile
              logicalType: boolean
      - name: tags
        logicalType: array
        items:
          logicalType: string
          logicalTypeOptions: {maxLength: 16}
      - name: notes
        logicalType: string
        quality:
          - metric: nullValues
            mustBeLessThan: 10
            unit: percent
          - type: text
            name: readable
            description: notes are written for a person
"""


def test_properties_at_every_depth_with_their_types_checks_keys_and_personal_marks(tmp_path):
    contract = read_document(write(tmp_path, SHIPMENT))
    assert contract.name == "shipments" and contract.source.endswith("c.odcs.yaml:shipments")
    rows = {r.path: r for r in describe(contract)}
    assert list(rows) == ["carrier", "tracking_no", "shipped_at", "due", "recipient", "recipient.name",
                          "recipient.zip", "parcels", "parcels[].weight_g", "parcels[].fragile", "tags",
                          "tags[]", "notes"]
    assert rows["carrier"].key and rows["tracking_no"].key and rows["carrier"].required
    assert rows["carrier"].checks == ("isin(DHL,UPS)",)
    assert rows["tracking_no"].checks == ("str_contains(^[A-Z0-9]{8,20}$)",)
    assert rows["shipped_at"].type == "timestamp" and not rows["shipped_at"].nullable
    assert contract.slot("due").checks == (Check("greater_than_or_equal_to",
                                                 {"min_value": date(2020, 1, 1)}),)
    assert rows["recipient"].personal and not rows["carrier"].personal
    assert rows["recipient.zip"].checks == ("str_contains(^[0-9]{5}$)",)
    assert rows["parcels"].checks == ("greater_than_or_equal_to(1)", "less_than_or_equal_to(20)")
    assert rows["parcels[].weight_g"].checks == ("greater_than(0)", "multiple_of(10)",
                                                 "in_range(min_value=-2147483648,"
                                                 "max_value=2147483647,include_min=True,include_max=True)")
    assert rows["tags[]"].checks == ("str_length(min_value=None,max_value=16)",) or \
        rows["tags[]"].checks == ("str_length(16)",)
    assert contract.message_key == (Path.of("carrier"), Path.of("tracking_no"))
    assert contract.unique_fields == []  # a key of several fields, not two unique fields


def test_quality_rules_on_a_share_of_the_batch_and_the_schemas_own_become_gate_expectations(tmp_path):
    contract = read_document(write(tmp_path, SHIPMENT))
    assert [e.configuration() for e in contract.expectations] == [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "notes", "mostly": 0.9},
         "meta": {"why": "ODCS quality rule notes.nullValues", "contract_rule": "notes.nullValues"}},
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 11},
         "meta": {"why": "ODCS quality rule enough_shipments", "contract_rule": "enough_shipments"}},
        {"type": "expect_compound_columns_to_be_unique",
         "kwargs": {"column_list": ["carrier", "tracking_no"]},
         "meta": {"why": "ODCS quality rule one_line_a_parcel", "contract_rule": "one_line_a_parcel"}},
    ]
    assert contract.passed_over[:3] == ("servers", "slaProperties", "team")
    assert "quality readable (text)" in contract.passed_over


def test_a_primary_key_of_one_property_is_that_propertys_unique_key(tmp_path):
    contract = read_document(write(tmp_path, """\
        schema:
          - name: ids
            properties:
              - {name: id, logicalType: string, primaryKey: true}
              - {name: n, logicalType: integer, quality: [{metric: duplicateValues, mustBe: 0}]}
        """))
    assert contract.key == () and contract.slot("id").unique
    assert contract.slot("id").required and not contract.slot("id").nullable
    # a second unique property is unique on its own, not a part of the key: refused by name
    assert contract.unique_fields == [Path.of("id"), Path.of("n")]
    with pytest.raises(ContractError, match="one unique field is supported"):
        unique_key(contract)


@pytest.mark.parametrize(("body", "words"), [
    ("schema: [{name: a, properties: [{name: x, logicalType: string}]}, {name: b, properties: "
     "[{name: y, logicalType: string}]}]", "has 2 schema objects (a, b); name one"),
    ("schema: [{name: a, properties: [{name: x}]}]", "x has no logicalType"),
    ("schema: [{name: a, properties: [{name: x, logicalType: time}]}]", "logicalType 'time' is not judged"),
    ("schema: [{name: a, properties: [{name: x, logicalType: string, logicalTypeOptions: {format: email}}]}]",
     "logicalTypeOptions ['format'] of a string are not judged"),
    ("schema: [{name: a, properties: [{name: x, logicalType: integer, quality: [{type: sql, "
     "query: 'select 1', mustBe: 1}]}]}]", "a sql quality rule (select 1) is not judged"),
    ("schema: [{name: a, properties: [{name: x, logicalType: integer, quality: [{metric: nullValues, "
     "mustBeLessThan: 3, unit: rows}]}]}]", "quality rule 'x.nullValues' (nullValues mustBeLessThan 3 rows)"),
    ("schema: [{name: a, properties: [{name: x, logicalType: integer, primaryKey: true}, "
     "{name: y, logicalType: integer, primaryKey: true}]}]", "needs each its own primaryKeyPosition"),
    ("schema: [{name: a, quality: [{metric: rowCount, mustNotBe: 3}], properties: [{name: x, "
     "logicalType: integer}]}]", "(rowCount mustNotBe) is not judged"),
    ("schema: [{name: a, properties: [{name: o, logicalType: object}]}]", "an object with no property"),
    ("schema: [{name: a, properties: [{name: t, logicalType: timestamp, logicalTypeOptions: "
     "{format: 'yyyy-MM-dd HH:mm:ss'}}]}]", "logicalTypeOptions.format 'yyyy-MM-dd HH:mm:ss' of a timestamp"),
    ("schema: [{name: a, properties: [{name: t, logicalType: timestamp, logicalTypeOptions: "
     "{minimum: '2020-01-01T00:00:00Z'}}]}]", "logicalTypeOptions.minimum of a timestamp is not judged"),
    ("schema: [{name: a, properties: [{name: t, logicalType: timestamp, logicalTypeOptions: "
     "{exclusiveMaximum: '2030-01-01T00:00:00Z', timezone: true}}]}]", "exclusiveMaximum of a timestamp"),
    ("schema: [{name: a, properties: [{name: x, logicalType: string}]}]\nsurprise: 1",
     "is no ODCS 3.x document"),
])
def test_what_cannot_be_judged_is_refused_by_name(tmp_path, body, words):
    with pytest.raises(ContractError, match="c.odcs.yaml") as refused:
        read_document(write(tmp_path, body))
    assert words in str(refused.value)


def test_the_schema_object_a_dataset_names_and_the_registry_reads_it(tmp_path):
    write(tmp_path, "schema: [{name: a, properties: [{name: x, logicalType: string}]}, {name: b, properties: "
                    "[{name: y, logicalType: integer, required: true}]}]")
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent("""\
        datasets:
          bees:
            contract: c.odcs.yaml:b
            expectation_suite: expectations/customers.json
        """))
    contract = load_registry(tmp_path / "pipeline.yaml")["bees"].read_contract()
    assert contract.name == "b" and [f.name for f in contract.fields] == ["y"]
    assert contract.passed_over[-1] == "schema a (another schema object)"
    with pytest.raises(ContractError, match="has no schema object 'c'; its schema objects: a, b"):
        read_document(tmp_path / "c.odcs.yaml", "c")


def test_the_gate_adds_the_contracts_expectations_after_the_suites_own(tmp_path):
    from foodtaster.engine.gate.gate import load_suite, suite_columns, with_contract_expectations

    contract = read_document(write(tmp_path, SHIPMENT))
    suite = load_suite("expectations/customers.json")
    merged = with_contract_expectations(suite, contract.expectations)
    assert merged["expectations"][:len(suite["expectations"])] == suite["expectations"]
    added = merged["expectations"][len(suite["expectations"]):]
    assert [e["meta"]["contract_rule"] for e in added] == ["notes.nullValues", "enough_shipments",
                                                          "one_line_a_parcel"]
    assert {"notes", "carrier", "tracking_no"} <= set(suite_columns(merged))
    assert with_contract_expectations(suite, ()) is suite
