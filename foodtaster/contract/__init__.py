"""The contract: what a dataset's messages must be, one model apart from its engines.

- `path`: `Path`, a value's place in a message, one printed form everywhere.
- `model`: the contract model (fields by path, types, checks, keys, strictness per scope).
- `pandera_reader`: the pandera front-end. Back-ends judge by the model: the Spark rules
  (`foodtaster.engine.judging.rules`, `row_checks`) and the pandas oracle (`foodtaster_dev.oracle`).
"""

from __future__ import annotations

from typing import Any

from foodtaster.contract.model import Contract


def read_contract(written: Any, source: str = "") -> Contract:
    """A contract from what a user wrote: a pandera DataFrameModel class."""
    from foodtaster.contract.pandera_reader import read_pandera

    return read_pandera(written, source)
