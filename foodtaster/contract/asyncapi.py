"""The AsyncAPI front-end: one message of an AsyncAPI 2.x or 3.0 document as a contract.

A producer describes its topics in AsyncAPI (channels, messages, a payload schema). The message
the dataset names (`contract: asyncapi.yaml:<message name or $ref>`, or the document's only
message) is judged by its payload, a JSON Schema (AsyncAPI's schema format is a superset of
draft-07), through the JSON Schema front-end (`json_schema.schema_contract`): the payload's
`$ref`s into the document (`#/components/schemas/...`) resolve in place, because the payload is
judged inside a copy of the document's `components`. A payload in another schema format (Avro,
Protobuf, RAML) is refused by name. The document's other parts (servers, operations, other
messages) are passed over and listed (`Contract.passed_over`).

A message's `headers` schema and its Kafka binding's `key` schema are not judged yet. Where the
dataset's source carries no headers or keys (the inbox: files of lines) they are passed over and
listed; where it does (`carried`: a Kafka source keeps both, a NATS source headers) they are
refused by name, unless the dataset lists them under `ignore` (`headers`, `bindings.kafka.key`):
then passed over knowingly, and listed
(docs/decisions/042-asyncapi-headers-and-keys-refused-where-carried.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path as FilePath
from typing import Any

from foodtaster.contract.document_text import load
from foodtaster.contract.json_schema import schema_contract
from foodtaster.contract.model import Contract, ContractError

VERSIONS = ("2.", "3.")
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
# Schema formats whose payload is judged as a JSON Schema (AsyncAPI's own is a draft-07 superset).
JSON_SCHEMA_FORMATS = ("application/vnd.aai.asyncapi", "application/vnd.aai.asyncapi+json",
                       "application/vnd.aai.asyncapi+yaml", "application/schema+json",
                       "application/schema+yaml")


# A message's parts besides its payload that a source may carry, by the name `ignore` takes.
HEADERS, KAFKA_KEY = "headers", "bindings.kafka.key"


def read_asyncapi(file: str | FilePath, part: str | None = None, *, ignore: tuple[str, ...] = (),
                  assert_formats: tuple[str, ...] = (), carried: frozenset[str] = frozenset()) -> Contract:
    """The named message's payload as a contract, or a ContractError naming what is refused.
    `carried`: the parts (HEADERS, KAFKA_KEY) the dataset's source keeps beside each message."""
    path = FilePath(file).resolve()
    document = load(path, "AsyncAPI document")
    version = str(document.get("asyncapi", "")) if isinstance(document, dict) else ""
    if not version.startswith(VERSIONS):
        raise ContractError(f"{path.name}: asyncapi {version!r} is not read here; AsyncAPI 2.x (2.6.0) or "
                            "3.x (3.0.0)")
    messages = dict(_messages(document))
    name, ref = _chosen(messages, part, path.name)
    message = _resolved(messages[name][1], document, path.name)
    where = f"{path.name}:{name}"
    payload, schema_format = _payload(message, version)
    if payload is None:
        raise ContractError(f"{where}: the message has no payload to judge")
    if schema_format is not None and not schema_format.startswith(JSON_SCHEMA_FORMATS):
        raise ContractError(f"{where}: the payload's schemaFormat {schema_format!r} is not judged here; a "
                            "JSON Schema or AsyncAPI schema payload is (an Avro or Protobuf payload is not)")
    schema = dict(payload) if isinstance(payload, dict) else {"allOf": [payload]}
    schema.setdefault("$schema", DRAFT_07)
    if isinstance(document.get("components"), dict):  # `#/components/...` resolves in place
        schema["components"] = document["components"]
    passed = [f"{part} (not judged)" for part in ("servers", "operations", "info", "tags", "externalDocs")
              if part in document]
    parts = {HEADERS: message.get("headers") is not None, KAFKA_KEY: _kafka_key(message) is not None}
    for name_, stated in parts.items():
        if not stated:
            continue
        if name_ in ignore:
            passed.append(f"{name_} (listed under ignore: not judged)")
        elif name_ in carried:
            raise ContractError(
                f"{where}: the message's {name_} schema is not judged here yet, and the dataset's source "
                f"carries {'headers' if name_ == HEADERS else 'record keys'}: they would go unjudged. List "
                f"{name_!r} under the dataset's ignore in pipeline.yaml to pass it over knowingly")
        else:
            passed.append(f"{name_} (the dataset's source carries none: files of lines)")
    ignore = tuple(i for i in ignore if i not in parts)
    if message.get("traits"):
        passed.append("traits (a message's traits add no payload)")
    if isinstance(message.get("bindings"), dict):
        passed += [f"bindings.{b} (not judged)" for b in message["bindings"]
                   if not (b == "kafka" and parts[KAFKA_KEY])]
    passed += [f"message {other} (another message)" for other in messages if other != name]
    return schema_contract(schema, path, ignore=ignore, assert_formats=assert_formats, name=name,
                           source=f"{path}:{ref}", passed_over=tuple(passed))


def _kafka_key(message: dict[str, Any]) -> Any:
    """The Kafka binding's key schema of a message, or None."""
    bindings = message.get("bindings")
    kafka = bindings.get("kafka") if isinstance(bindings, dict) else None
    return kafka.get("key") if isinstance(kafka, dict) else None


def _messages(document: dict[str, Any]) -> Iterator[tuple[str, tuple[str, Any]]]:
    """Every message by name: (its `$ref` in the document, the message as written)."""
    seen: set[str] = set()
    components = (document.get("components") or {}).get("messages") or {}
    for key, message in components.items():
        seen.add(f"#/components/messages/{_escape(key)}")
        yield key, (f"#/components/messages/{_escape(key)}", message)
    for channel, item in (document.get("channels") or {}).items():
        if not isinstance(item, dict):
            continue
        where = f"#/channels/{_escape(channel)}"
        found: list[tuple[str, str, Any]] = []
        for key, message in (item.get("messages") or {}).items():  # 3.0
            found.append((key, f"{where}/messages/{_escape(key)}", message))
        for verb in ("publish", "subscribe"):  # 2.x
            message = (item.get(verb) or {}).get("message")
            if isinstance(message, dict) and isinstance(message.get("oneOf"), list):
                found += [(_name_of(m, f"{channel}.{verb}.{i}"), f"{where}/{verb}/message/oneOf/{i}", m)
                          for i, m in enumerate(message["oneOf"])]
            elif isinstance(message, dict):
                found.append((_name_of(message, f"{channel}.{verb}"), f"{where}/{verb}/message", message))
        for key, ref, message in found:
            target = message.get("$ref") if isinstance(message, dict) else None
            if target in seen:
                continue
            seen.add(target or ref)
            yield key, (ref, message)


def _name_of(message: Any, fallback: str) -> str:
    if isinstance(message, dict):
        for key in ("name", "messageId"):
            if isinstance(message.get(key), str):
                return str(message[key])
        ref = message.get("$ref")
        if isinstance(ref, str):
            return ref.rsplit("/", 1)[-1]
    return fallback


def _chosen(messages: dict[str, tuple[str, Any]], part: str | None, file: str) -> tuple[str, str]:
    if not messages:
        raise ContractError(f"{file}: the document has no message")
    if part is None:
        if len(messages) != 1:
            raise ContractError(f"{file} has {len(messages)} messages ({', '.join(messages)}); name one: "
                                "contract: <file>:<message name or $ref>")
        (name,) = messages
        return name, messages[name][0]
    wanted = part if not part.startswith("/") else "#" + part
    for name, (ref, _) in messages.items():
        if part == name or wanted == ref:
            return name, ref
    raise ContractError(f"{file} has no message {part!r}; its messages: "
                        + ", ".join(f"{n} ({r})" for n, (r, _) in messages.items()))


def _resolved(value: Any, document: Any, file: str, depth: int = 0) -> Any:
    """A message (or a payload) with its own `$ref` into the document followed."""
    while isinstance(value, dict) and isinstance(value.get("$ref"), str):
        ref = value["$ref"]
        if not ref.startswith("#/") or depth > 32:
            raise ContractError(f"{file}: $ref {ref!r} names no part of this document; a message is "
                                "referred to as #/components/messages/<name>")
        target: Any = document
        for step in ref[2:].split("/"):
            step = step.replace("~1", "/").replace("~0", "~")
            target = target.get(step) if isinstance(target, dict) else None
        if target is None:
            raise ContractError(f"{file}: $ref {ref!r} names nothing in the document")
        value, depth = target, depth + 1
    return value


def _payload(message: dict[str, Any], version: str) -> tuple[Any, str | None]:
    """The payload schema and the schema format it is written in (None: AsyncAPI's own)."""
    payload = message.get("payload")
    schema_format = message.get("schemaFormat")  # 2.x
    if version.startswith("3.") and isinstance(payload, dict) and "schemaFormat" in payload:
        schema_format, payload = payload["schemaFormat"], payload.get("schema")  # a multi-format schema
    return payload, schema_format if isinstance(schema_format, str) else None


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
