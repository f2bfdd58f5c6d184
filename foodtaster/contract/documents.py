"""A contract given as a document, read by its front-end: a JSON Schema (`.json`), an ODCS data
contract or an AsyncAPI document (`.yaml`/`.yml`, told apart by their own top-level keys)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path as FilePath
from typing import Any

import yaml

from foodtaster.contract.model import Contract, ContractError


def read_document(file: str | FilePath, part: str | None = None, *, ignore: tuple[str, ...] = (),
                  assert_formats: tuple[str, ...] = ()) -> Contract:
    """The contract a document states; `part` names an ODCS schema object or an AsyncAPI
    message where the document has several."""
    path = FilePath(file)
    if path.suffix == ".json":
        from foodtaster.contract.json_schema import read_json_schema

        if part is not None:
            raise ContractError(f"{path.name}: a JSON Schema is one contract; {part!r} after it names "
                                "nothing")
        return read_json_schema(path, ignore=ignore, assert_formats=assert_formats)
    document = load(path, "contract")
    if isinstance(document, dict) and "asyncapi" in document:
        from foodtaster.contract.asyncapi import read_asyncapi

        return read_asyncapi(path, part, ignore=ignore, assert_formats=assert_formats)
    from foodtaster.contract.odcs import is_odcs, read_odcs

    if is_odcs(document):
        if ignore or assert_formats:
            raise ContractError(f"{path.name}: ignore and assert_formats are a JSON Schema's; an ODCS "
                                "contract says its checks itself")
        return read_odcs(path, part)
    raise ContractError(f"{path.name} is neither an ODCS data contract (kind: DataContract) nor an AsyncAPI "
                        "document (asyncapi: 2.6.0 or 3.0.0)")


def load(path: FilePath, what: str, loads: Callable[[str], Any] = yaml.safe_load) -> Any:
    """A document's text parsed (YAML; `json.loads` for a JSON Schema), or a ContractError
    saying it is missing or not of its language."""
    try:
        return loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ContractError(f"{what} {path} does not exist") from err
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as err:  # json.JSONDecodeError: a ValueError
        language = "JSON" if loads is json.loads else "YAML"
        raise ContractError(f"{what} {path.name} is not {language}: {err}") from err
