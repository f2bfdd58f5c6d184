"""A contract document's text read and parsed, with the errors a person reads: shared by every
front-end (JSON Schema, ODCS, AsyncAPI) and the dispatch in `documents`, which imports them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path as FilePath
from typing import Any

import yaml

from foodtaster.contract.model import ContractError


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
