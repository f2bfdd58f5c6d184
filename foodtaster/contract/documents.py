"""A contract given as a document, read by its front-end: a JSON Schema (`.json`), an ODCS data
contract or an AsyncAPI document (`.yaml`/`.yml`, told apart by their own top-level keys)."""

from __future__ import annotations

from pathlib import Path as FilePath

from foodtaster.contract.asyncapi import read_asyncapi
from foodtaster.contract.document_text import load
from foodtaster.contract.json_schema import read_json_schema
from foodtaster.contract.model import Contract, ContractError
from foodtaster.contract.odcs import is_odcs, read_odcs


def read_document(file: str | FilePath, part: str | None = None, *, ignore: tuple[str, ...] = (),
                  assert_formats: tuple[str, ...] = (), carried: frozenset[str] = frozenset()) -> Contract:
    """The contract a document states; `part` names an ODCS schema object or an AsyncAPI
    message where the document has several; `carried` what the dataset's source keeps beside
    a message (an AsyncAPI message's headers, its Kafka key: `asyncapi.read_asyncapi`)."""
    path = FilePath(file)
    if path.suffix == ".json":
        if part is not None:
            raise ContractError(f"{path.name}: a JSON Schema is one contract; {part!r} after it names "
                                "nothing")
        return read_json_schema(path, ignore=ignore, assert_formats=assert_formats)
    document = load(path, "contract")
    if isinstance(document, dict) and "asyncapi" in document:
        return read_asyncapi(path, part, ignore=ignore, assert_formats=assert_formats, carried=carried)
    if is_odcs(document):
        if ignore or assert_formats:
            raise ContractError(f"{path.name}: ignore and assert_formats are a JSON Schema's; an ODCS "
                                "contract says its checks itself")
        return read_odcs(path, part)
    raise ContractError(f"{path.name} is neither an ODCS data contract (kind: DataContract) nor an AsyncAPI "
                        "document (asyncapi: 2.6.0 or 3.0.0)")
