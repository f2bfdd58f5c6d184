"""Reading one message of an AsyncAPI document (`foodtaster.contract.asyncapi`), without Spark:
2.6 and 3.0 documents, the message named or the only one, its payload's `$ref`s into
`components`, judged by the JSON Schema path, and the refusals by name."""

from __future__ import annotations

import json
import textwrap

import pytest

from foodtaster.contract.describe import describe
from foodtaster.contract.documents import read_document
from foodtaster.contract.model import ContractError
from foodtaster.engine.judging.schema_judge import judge_message

COMPONENTS = """\
components:
  messages:
    LightMeasured:
      name: lightMeasured
      headers:
        type: object
        properties: {my-app-header: {type: integer}}
      bindings:
        kafka:
          key: {type: string}
      payload:
        $ref: "#/components/schemas/lightMeasuredPayload"
    TurnOn:
      payload:
        type: object
        properties: {command: {type: string, enum: ["on"]}}
  schemas:
    lightMeasuredPayload:
      type: object
      required: [id, lumens]
      properties:
        id: {type: integer, minimum: 0}
        lumens: {type: integer, minimum: 0}
        sentAt: {$ref: "#/components/schemas/sentAt"}
    sentAt: {type: string, format: date-time}
"""

V26 = """\
asyncapi: 2.6.0
info: {title: Streetlights, version: 1.0.0}
channels:
  smartylighting.streetlights.1.0.event.lighting.measured:
    subscribe:
      message: {$ref: "#/components/messages/LightMeasured"}
  smartylighting.streetlights.1.0.action.turn.on:
    publish:
      message: {$ref: "#/components/messages/TurnOn"}
""" + COMPONENTS

V30 = """\
asyncapi: 3.0.0
info: {title: Streetlights, version: 1.0.0}
channels:
  lightingMeasured:
    address: smartylighting.streetlights.1.0.event.lighting.measured
    messages:
      lightMeasured: {$ref: "#/components/messages/LightMeasured"}
operations:
  receiveLightMeasurement:
    action: receive
    channel: {$ref: "#/channels/lightingMeasured"}
""" + COMPONENTS


def write(tmp_path, text, name="asyncapi.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def verdict(contract, message):
    found = judge_message(contract.schema.validator(), json.dumps(message))
    return None if found is None else sorted((rule, column) for _, rule, column, _, _ in found)


@pytest.mark.parametrize("text", [V26, V30], ids=["2.6", "3.0"])
def test_a_message_by_name_or_ref_is_judged_by_its_payload_with_components_resolved(tmp_path, text):
    file = write(tmp_path, text)
    for part in ("LightMeasured", "#/components/messages/LightMeasured"):
        contract = read_document(file, part)
        assert contract.name == "LightMeasured" and contract.judged_by_schema
        assert [f.name for f in contract.fields] == ["id", "lumens", "sentAt"]
        assert verdict(contract, {"id": 1, "lumens": 3, "sentAt": "2026-11-20T10:00:00Z"}) is None
        assert verdict(contract, {"id": -1, "sentAt": 5}) == [
            ("id.minimum(0)", "id"), ("lumens.required", "lumens"), ("sentAt.type(string)", "sentAt")]
    assert "headers (the dataset's source carries none: files of lines)" in contract.passed_over
    assert "bindings.kafka.key (the dataset's source carries none: files of lines)" in contract.passed_over
    assert [r.path for r in describe(contract)] == ["id", "lumens", "sentAt"]


def test_headers_and_a_kafka_key_a_source_carries_are_refused_by_name_unless_ignored(tmp_path):
    """Not judged yet: where the source keeps them beside the message (Kafka: headers and key;
    NATS: headers), the contract is refused by name; listed under `ignore`, passed over."""
    file = write(tmp_path, V30)
    kafka, nats = frozenset({"headers", "bindings.kafka.key"}), frozenset({"headers"})
    with pytest.raises(ContractError, match=r"LightMeasured: .*headers schema is not judged here yet.*"
                                            r"carries headers.*'headers' under the dataset's ignore"):
        read_document(file, "LightMeasured", carried=nats)
    with pytest.raises(ContractError, match=r"bindings.kafka.key schema is not judged.*carries record keys"):
        read_document(file, "LightMeasured", carried=kafka, ignore=("headers",))
    contract = read_document(file, "LightMeasured", carried=kafka, ignore=("headers", "bindings.kafka.key"))
    assert {"headers (listed under ignore: not judged)",
            "bindings.kafka.key (listed under ignore: not judged)"} <= set(contract.passed_over)
    assert contract.schema.ignored == ()  # message parts, not keywords of the payload's schema
    assert read_document(file, "TurnOn", carried=kafka).passed_over  # a message with neither: read


def test_the_message_must_be_named_where_the_document_has_several(tmp_path):
    file = write(tmp_path, V26)
    with pytest.raises(ContractError, match=r"has 2 messages \(LightMeasured, TurnOn\); name one"):
        read_document(file)
    with pytest.raises(ContractError, match="has no message 'Nope'; its messages: LightMeasured"):
        read_document(file, "Nope")


def test_a_payload_in_another_schema_format_or_version_is_refused_by_name(tmp_path):
    avro = textwrap.dedent("""\
        asyncapi: 3.0.0
        info: {title: t, version: "1"}
        components:
          messages:
            Costing:
              payload:
                schemaFormat: application/vnd.apache.avro;version=1.9.0
                schema: {type: record, name: Costing, fields: [{name: id, type: string}]}
        """)
    with pytest.raises(ContractError, match="schemaFormat 'application/vnd.apache.avro;version=1.9.0'"):
        read_document(write(tmp_path, avro))
    with pytest.raises(ContractError, match="asyncapi '1.2.0' is not read here"):
        read_document(write(tmp_path, "asyncapi: 1.2.0\n"))
    with pytest.raises(ContractError, match="neither an ODCS data contract"):
        read_document(write(tmp_path, "openapi: 3.1.0\n"))


def test_contract_import_turns_a_messages_payload_into_pandera_and_refuses_an_odcs_contract(tmp_path, capsys):
    from foodtaster.ops.cli import main

    file = write(tmp_path, V30)
    assert main(["contract", "import", f"{file}:LightMeasured"]) == 0
    module = capsys.readouterr().out
    assert "class LightMeasured(pa.DataFrameModel):" in module
    assert "id: Series[int] = pa.Field(ge=0)" in module and "alias='sentAt'" in module
    assert main(["contract", "import", "contracts/shipments.odcs.yaml"]) == 2
    assert "an ODCS contract is judged as it is" in capsys.readouterr().err
